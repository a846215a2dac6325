import { afterWorkerLoss, MAX_WORKER_LOSSES } from '../../domain/jobs/jobState.js'
import type { JobLifecycle } from './JobLifecycle.js'

/**
 * A running job whose worker is gone: back to the queue, or FAILED once it lost workers too often.
 * `counts` is false when the platform stopped the worker on purpose (the loss is not the job's). With `note`,
 * a requeued job carries the reason in its `error` while it waits (shown until it completes).
 */
export async function loseJob(
  lifecycle: JobLifecycle,
  job: { id: string; retries: number },
  workerId: string,
  reason: string,
  counts: boolean,
  note = false,
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
