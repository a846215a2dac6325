import { afterWorkerLoss, MAX_WORKER_LOSSES } from '../domain/jobState.js'
import type { JobLifecycle } from './JobLifecycle.js'

/**
 * A running job whose worker is gone: back to the queue, or FAILED once it lost workers too often.
 * `counts` is false when the platform stopped the worker on purpose (the loss is not the job's).
 */
export async function loseJob(lifecycle: JobLifecycle, job: { id: string; retries: number }, workerId: string, reason: string, counts: boolean): Promise<void> {
  const on = workerId || undefined
  if (!counts) {
    await lifecycle.apply(job.id, 'requeue', { workerId: null, startedAt: null, progress: undefined }, on)
  } else if (afterWorkerLoss(job.retries) === 'requeue') {
    await lifecycle.apply(job.id, 'requeue', { workerId: null, startedAt: null, progress: undefined, retries: job.retries + 1 }, on)
  } else {
    await lifecycle.apply(job.id, 'fail', { retries: job.retries + 1, error: `the job lost its worker ${MAX_WORKER_LOSSES} times; last: ${reason}` }, on)
  }
}
