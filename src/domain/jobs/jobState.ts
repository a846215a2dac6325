import type { JobStatus } from '../../contract/job.js'

/** Everything that moves a job; the spec names some, the rest are how work reaches a final state. */
export type JobEvent =
  /** the worker posted an output */
  | 'complete'
  /** the worker posted an error, or the job lost its worker too often */
  | 'fail'
  /** its execution timeout elapsed */
  | 'timeout'
  /** POST /cancel */
  | 'cancel'
  /** POST /retry */
  | 'retry'
  /** its worker died or stopped pinging: back to the queue */
  | 'requeue'

const TRANSITIONS: Record<JobEvent, { from: readonly JobStatus[]; to: JobStatus }> = {
  complete: { from: ['IN_PROGRESS'], to: 'COMPLETED' },
  fail: { from: ['IN_PROGRESS'], to: 'FAILED' },
  timeout: { from: ['IN_PROGRESS'], to: 'TIMED_OUT' },
  cancel: { from: ['IN_QUEUE', 'IN_PROGRESS'], to: 'CANCELLED' },
  retry: { from: ['FAILED', 'TIMED_OUT'], to: 'IN_QUEUE' },
  requeue: { from: ['IN_PROGRESS'], to: 'IN_QUEUE' },
}

/** The status `event` moves a job in `from` to, or null when the event does not apply there. */
export function nextStatus(from: JobStatus, event: JobEvent): JobStatus | null {
  const t = TRANSITIONS[event]
  return t.from.includes(from) ? t.to : null
}

/** The statuses `event` applies to: the store's compare-and-set condition for that move. */
export function sourcesOf(event: JobEvent): JobStatus[] {
  return [...TRANSITIONS[event].from]
}

/** The status `event` leads to. */
export function targetOf(event: JobEvent): JobStatus {
  return TRANSITIONS[event].to
}

/** True for COMPLETED, FAILED, CANCELLED and TIMED_OUT. */
export function isFinal(status: JobStatus): boolean {
  return status !== 'IN_QUEUE' && status !== 'IN_PROGRESS'
}

/** How many times a job may lose its worker before it fails instead of going back to the queue. */
export const MAX_WORKER_LOSSES = 3

/** What happens to a running job whose worker is gone, given how often it was requeued already. */
export function afterWorkerLoss(retries: number): JobEvent {
  return retries + 1 >= MAX_WORKER_LOSSES ? 'fail' : 'requeue'
}

/** Result retention after completion: 30 min for /run; 1 min for /runsync, up to 5 min with `wait`. */
export function retentionMs(sync: boolean, waitMs?: number): number {
  if (!sync) return 30 * 60_000
  if (waitMs === undefined) return 60_000
  return Math.min(300_000, Math.max(60_000, waitMs))
}
