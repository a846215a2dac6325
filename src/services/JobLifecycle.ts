import type { JobStatus } from '../contract/job.js'
import type { Clock } from '../domain/clock.js'
import { isFinal, sourcesOf, targetOf, type JobEvent } from '../domain/jobState.js'
import type { JobPatch, JobRecord } from '../store/JobStore.js'
import type { Store } from '../store/Store.js'
import type { WebhookDelivery } from '../store/WebhookStore.js'
import type { JobEvents } from './JobEvents.js'
import type { Metrics } from './Metrics.js'

/** Where finished jobs with a `webhook` are handed for delivery (the WebhookDispatcher). */
export interface WebhookQueue {
  /** The delivery to record for a finished job (stored with its final state, in one transaction). */
  delivery(job: JobRecord): WebhookDelivery
  /** A delivery was recorded: attempt it soon, off the job path. */
  notify(): void
}

/**
 * The one place a job changes state. Each move is a compare-and-set in the store (so a cancel racing a
 * completion has exactly one winner); the winner's side effects follow: waiters are woken, the worker is
 * told to stop a job it may still run, and a webhook delivery is recorded atomically with the move.
 */
export class JobLifecycle {
  constructor(private readonly deps: { store: Store; clock: Clock; events: JobEvents; webhooks: WebhookQueue; metrics?: Metrics }) {}

  /**
   * Applies `event` to job `id`, with the fields in `patch`; when `workerId` is given the job must be
   * running on that worker. Returns the updated job, or undefined when the event does not apply now.
   */
  async apply(id: string, event: JobEvent, patch: JobPatch = {}, workerId?: string): Promise<JobRecord | undefined> {
    const { store, clock, events } = this.deps
    const to: JobStatus = targetOf(event)
    const now = clock.now()
    const full: JobPatch = { ...patch, status: to }
    if (isFinal(to)) {
      full.completedAt ??= now
      full.retainFrom = full.completedAt
    }
    const { webhooks } = this.deps
    const outbox = isFinal(to) ? (j: JobRecord) => (j.webhook ? webhooks.delivery(j) : undefined) : undefined
    const job = await store.jobs.transition(id, sourcesOf(event), full, workerId, outbox)
    if (!job) return undefined
    if (outbox && job.webhook) webhooks.notify()
    if (isFinal(to)) this.deps.metrics?.jobFinished(job.endpointId, to, job.startedAt !== null && job.completedAt !== null ? job.completedAt - job.startedAt : null)
    // The worker it ran on: given by the caller, or still recorded for moves out of IN_PROGRESS.
    const ranOn = workerId ?? (job.startedAt !== null || event === 'requeue' || event === 'timeout' ? job.workerId : null)
    if (ranOn && event !== 'take' && event !== 'retry') {
      events.jobLeftWorker(ranOn, id)
      if (event === 'cancel' || event === 'timeout') events.requestStop(ranOn, id)
    }
    events.jobChanged(id)
    if (to === 'IN_QUEUE') events.queued(job.endpointId)
    return job
  }

  /** Deletes a job (TTL or retention elapsed, purge); a worker still running it is told to stop. */
  async remove(job: JobRecord): Promise<boolean> {
    const { store, events } = this.deps
    const deleted = await store.jobs.delete(job.id)
    if (!deleted) return false
    if (job.status === 'IN_PROGRESS' && job.workerId) {
      events.jobLeftWorker(job.workerId, job.id)
      events.requestStop(job.workerId, job.id)
    }
    events.jobChanged(job.id)
    return true
  }
}
