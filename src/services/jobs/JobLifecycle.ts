import type { IdempotencyClaim, IdempotentInsert } from '../../domain/jobs/idempotency.js'
import type { JobStatus } from '../../contract/job.js'
import type { Clock } from '../../domain/clock.js'
import { isFinal, sourcesOf, targetOf, type JobEvent } from '../../domain/jobs/jobState.js'
import type { JobPatch, JobRecord, TakenJob } from '../../store/JobStore.js'
import type { Store } from '../../store/Store.js'
import type { WebhookDelivery } from '../../store/WebhookStore.js'
import type { JobEvents } from './JobEvents.js'
import type { Metrics } from '../Metrics.js'

/** Where finished jobs with a `webhook` are handed for delivery (the WebhookDispatcher). */
export interface WebhookQueue {
  /** The delivery to record for a finished job (stored with its final state, in one transaction). */
  delivery(job: JobRecord): WebhookDelivery
  /** A delivery was recorded: attempt it soon, off the job path. */
  notify(): void
}

/**
 * The one place a job is written after it is created: submission, take, progress, state moves, its TTL,
 * deletion and purge. Each state move is a compare-and-set in the store (so a cancel racing a completion
 * has exactly one winner); the winner's side effects follow: waiters are woken, the worker is told to stop
 * a job it may still run, and a webhook delivery is recorded atomically with the move. (Stream chunks are
 * appended by WorkerJobService: they are output, not state.)
 */
export class JobLifecycle {
  constructor(
    private readonly deps: { store: Store; clock: Clock; events: JobEvents; webhooks: WebhookQueue; metrics?: Metrics },
  ) {}

  /** A new job enters the queue (/run, /runsync). */
  async enqueue(job: JobRecord): Promise<void> {
    const { store, events } = this.deps
    const stored = store.jobs.insert(job)
    if (!store.jobs.writesInOrder) {
      await stored
      events.queued(job.endpointId, job.lowPriority)
      return
    }
    // A worker waiting in job-take hears of the job before its insert commits: its take joins the same
    // commit, instead of following it with one of its own. The caller still answers only once the insert
    // is committed, and the worker only once both are.
    try {
      events.queued(job.endpointId, job.lowPriority)
    } finally {
      await stored
    }
  }

  /** job-submit under an Idempotency-Key: the job goes in only if the key names no job yet (see JobStore). */
  async enqueueIdempotent(job: JobRecord, claim: IdempotencyClaim): Promise<IdempotentInsert> {
    const result = await this.deps.store.jobs.insertIdempotent(job, claim)
    if (result.inserted) this.deps.events.queued(job.endpointId, job.lowPriority)
    return result
  }

  /**
   * job-take: up to `max` waiting jobs of the endpoint move IN_QUEUE -> IN_PROGRESS on `workerId`. The
   * store picks and moves them in one statement (not a compare-and-set per job: nothing else claims a
   * waiting job), so this move is not one of the events of `domain/jobs/jobState.ts`. It wakes no waiter:
   * those on a job (runsync, status-sync, stream) wait for a final state or chunks, and a wake-up here made
   * each /runsync read its job once more while the worker's answer was on its way.
   */
  take(endpointId: string, workerId: string, max: number): Promise<TakenJob[]> {
    return this.deps.store.jobs.take(endpointId, workerId, max, this.deps.clock.now())
  }

  /** A progress update of a job running on `workerId` (it stays IN_PROGRESS); undefined when it no longer runs there. */
  async progress(id: string, workerId: string, progress: unknown): Promise<JobRecord | undefined> {
    const job = await this.deps.store.jobs.transition(id, ['IN_PROGRESS'], { progress }, workerId)
    if (job) this.deps.events.jobChanged(id)
    return job
  }

  /**
   * Replaces a job's time-to-live, counted from its submission (/status?ttl=); a finished job's result is
   * kept as long. Its status does not change.
   */
  async setTtl(job: JobRecord, ttlMs: number): Promise<JobRecord> {
    const deadline = job.createdAt + ttlMs
    const patch: JobPatch = isFinal(job.status)
      ? { ttlMs, expiresAt: deadline, retainUntil: deadline }
      : { ttlMs, expiresAt: deadline }
    return (await this.deps.store.jobs.transition(job.id, ANY_STATUS, patch)) ?? job
  }

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
    if (isFinal(to)) {
      const run = job.startedAt !== null && job.completedAt !== null ? job.completedAt - job.startedAt : null
      this.deps.metrics?.jobFinished(
        job.endpointId,
        to,
        run,
        job.startedAt !== null ? job.startedAt - job.createdAt : null,
      )
    }
    // The worker it ran on: given by the caller, or still recorded for moves out of IN_PROGRESS.
    const ranOn =
      workerId ?? (job.startedAt !== null || event === 'requeue' || event === 'timeout' ? job.workerId : null)
    if (ranOn && event !== 'retry') {
      events.jobLeftWorker(ranOn, id)
      if (event === 'cancel' || event === 'timeout') events.requestStop(ranOn, id)
    }
    events.jobChanged(id, job)
    if (to === 'IN_QUEUE') events.queued(job.endpointId, job.lowPriority)
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

  /** /purge-queue: removes an endpoint's waiting jobs (running ones continue); returns how many. */
  async purgeQueued(endpointId: string): Promise<number> {
    const { store, events } = this.deps
    const removed = await store.jobs.purgeQueued(endpointId)
    // Requests waiting on a job wake and look again: those on a purged job answer 404. (Waking only the
    // watched jobs, not one event per removed job: a purge can remove a million.)
    for (const id of events.watchedJobs()) events.jobChanged(id)
    return removed
  }
}

const ANY_STATUS = [
  'IN_QUEUE',
  'IN_PROGRESS',
  'COMPLETED',
  'FAILED',
  'CANCELLED',
  'TIMED_OUT',
] as const satisfies readonly JobStatus[]
