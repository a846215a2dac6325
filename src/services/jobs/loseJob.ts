import { afterWorkerLoss, MAX_WORKER_LOSSES } from '../../domain/jobs/jobState.js'
import type { JobLifecycle } from './JobLifecycle.js'

/** How a job lost its worker (see `loseJob`). */
export interface JobLoss {
  /** The worker it ran on ('' when the record did not say). */
  workerId: string
  /** Why the worker is gone: the error of a job that fails for it, the note of a requeued one. */
  reason: string
  /** False when the platform stopped the worker on purpose: the loss is not the job's and is not counted. */
  counts: boolean
  /** A requeued job carries `reason` in its `error` while it waits (shown until it completes). */
  note?: boolean
}

/** A running job whose worker is gone: back to the queue, or FAILED once it lost workers too often. */
export async function loseJob(
  lifecycle: JobLifecycle,
  job: { id: string; retries: number },
  { workerId, reason, counts, note = false }: JobLoss,
): Promise<void> {
  const on = workerId || undefined
  if (!counts) {
    await lifecycle.apply(job.id, 'requeue', { workerId: null, startedAt: null, progress: undefined }, on)
  } else if (afterWorkerLoss(job.retries) === 'requeue') {
    const said = note ? { error: `requeued (${job.retries + 1} of ${MAX_WORKER_LOSSES - 1} allowed): ${reason}` } : {}
    await lifecycle.apply(
      job.id,
      'requeue',
      { workerId: null, startedAt: null, progress: undefined, retries: job.retries + 1, ...said },
      on,
    )
  } else {
    await lifecycle.apply(
      job.id,
      'fail',
      { retries: job.retries + 1, error: `the job lost its worker ${MAX_WORKER_LOSSES} times; last: ${reason}` },
      on,
    )
  }
}
