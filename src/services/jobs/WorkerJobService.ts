import type {
  WorkerDoneBatchItem,
  WorkerDoneBatchReply,
  WorkerDoneBody,
  WorkerJob,
  WorkerPostReply,
} from '../../contract/worker.js'
import type { Clock } from '../../domain/clock.js'
import { DomainError } from '../../domain/errors.js'
import { splitChunk } from '../../domain/jobs/streamChunks.js'
import type { JobRecord, TakenJob } from '../../store/JobStore.js'
import type { Store } from '../../store/Store.js'
import type { Log } from '../log.js'
import type { DroppedTakes } from './DroppedTakes.js'
import type { JobEvents } from './JobEvents.js'
import type { JobLifecycle } from './JobLifecycle.js'
import { loseJob } from './loseJob.js'
import type { TakeTurn } from '../workers/types.js'
import { openS3Config } from './s3Secret.js'
import type { SecretBox } from '../SecretBox.js'

export interface WorkerJobServiceDeps {
  store: Store
  clock: Clock
  events: JobEvents
  lifecycle: JobLifecycle
  workers: ProtocolWorkers
  /** How long job-take and job-stop hold the request when there is nothing. */
  takeWaitMs: number
  /** Opens a job's sealed `s3Config.accessSecret` for the worker. */
  secrets: SecretBox
  /** Where jobs requeued because their worker never acknowledged them are counted (for why-waiting). */
  dropped?: DroppedTakes
  log?: Log
}

/** What the worker protocol tells the workers and asks of them (see WorkerService). */
export interface ProtocolWorkers {
  /** One pass of a worker's job-take: counts as contact, then says whether it may take jobs now. */
  takeTurn(workerId: string): TakeTurn
  /** Records the jobs a worker took. */
  jobsTaken(workerId: string, jobIds: string[]): void
  /** A sign of life of the worker (any protocol call). */
  contact(workerId: string): void
  /** True when the worker gets no more jobs and should not wait for one. */
  isDraining(workerId: string): boolean
  /** The worker asked to be replaced (stopPod): stop it once its running jobs have ended. */
  recycle(workerId: string): void
}

/**
 * The worker side of the queue: take, stop channel, results, stream chunks, heartbeats. Callers are
 * authenticated workers (their own protocol key); each call counts as a sign of life.
 */
export class WorkerJobService {
  constructor(private readonly deps: WorkerJobServiceDeps) {}

  /** True while the control plane shuts down: waits end at once, so callers should not come back. */
  get closing(): boolean {
    return this.deps.events.closed
  }

  /**
   * job-take / job-take-batch: up to `max` jobs for the worker, waiting up to the configured time for
   * one to arrive. Empty means "none" (204). `gone()` tells when the worker hung up meanwhile, so no job
   * is handed to a closed connection.
   */
  async take(endpointId: string, workerId: string, max: number, gone: () => boolean): Promise<WorkerJob[]> {
    const { events, workers } = this.deps
    const sub = events.subscribe(`queue:${endpointId}`, `worker:${workerId}`)
    try {
      const deadline = Date.now() + this.deps.takeWaitMs
      for (;;) {
        const turn = workers.takeTurn(workerId)
        if (turn === 'drain' || events.closed || gone()) return []
        // Parked (FlashBoot) or retiring: hold the poll without a job (answering at once would make the SDK spin).
        if (turn === 'hold') {
          const left = deadline - Date.now()
          if (left <= 0) return []
          await sub.wait(left)
          continue
        }
        const jobs = await this.deps.lifecycle.take(endpointId, workerId, max)
        if (jobs.length > 0) {
          workers.jobsTaken(
            workerId,
            jobs.map((j) => j.id),
          )
          return jobs.map((j) => toWorkerJob(j, this.deps.secrets))
        }
        const left = deadline - Date.now()
        if (left <= 0) return []
        await sub.wait(left)
      }
    } finally {
      sub.close()
    }
  }

  /** job-stop: the ids of running jobs the worker must stop (cancelled, timed out, expired). */
  async stops(workerId: string, gone: () => boolean): Promise<string[]> {
    const { events, workers } = this.deps
    const sub = events.subscribe(`stop:${workerId}`, `worker:${workerId}`)
    try {
      const deadline = Date.now() + this.deps.takeWaitMs
      for (;;) {
        workers.contact(workerId)
        const ids = events.takeStops(workerId)
        if (ids.length > 0 || events.closed || gone()) return ids
        const left = deadline - Date.now()
        if (left <= 0 || workers.isDraining(workerId)) return []
        await sub.wait(left)
      }
    } finally {
      sub.close()
    }
  }

  /**
   * job-done. `status: IN_PROGRESS` is a progress update; an `error` fails the job; anything else
   * completes it with `output`. `stopPod` has the worker replaced once its jobs end.
   */
  async done(workerId: string, jobId: string, body: WorkerDoneBody): Promise<WorkerPostReply> {
    this.deps.workers.contact(workerId)
    return this.settle(workerId, jobId, body)
  }

  /**
   * job-done-batch: each item as job-done with its body. They are started together and awaited as one, so
   * their writes fall in one turn of the event loop and share the store's group commit. The items must
   * have distinct ids (the route checks the body).
   */
  async doneBatch(workerId: string, items: WorkerDoneBatchItem[]): Promise<WorkerDoneBatchReply> {
    this.deps.workers.contact(workerId)
    const replies = await Promise.all(items.map((item) => this.settle(workerId, item.id, item)))
    return { results: replies.map((r, k) => ({ id: items[k].id, ...r })) }
  }

  // `isStream` (job-done's query, a batch item's field) only says chunks were posted before; the body's
  // output (the aggregate, or []) is the result.
  private async settle(workerId: string, jobId: string, body: WorkerDoneBody): Promise<WorkerPostReply> {
    const { lifecycle, workers } = this.deps
    if (body.status === 'IN_PROGRESS')
      return this.result(jobId, await lifecycle.progress(jobId, workerId, body.output ?? null))
    let job: JobRecord | undefined
    if (body.error !== undefined && body.error !== null && body.error !== '') {
      const error = typeof body.error === 'string' ? body.error : JSON.stringify(body.error)
      job = await lifecycle.apply(
        jobId,
        'fail',
        { error, ...(body.output !== undefined ? { output: body.output } : {}) },
        workerId,
      )
    } else {
      job = await lifecycle.apply(
        jobId,
        'complete',
        { output: body.output === undefined ? null : body.output, progress: undefined },
        workerId,
      )
    }
    if (body.stopPod === true) workers.recycle(workerId)
    return this.result(jobId, job)
  }

  /** What became of a posted result: applied, or ignored because the job is no longer running there. */
  private async result(jobId: string, job: JobRecord | undefined): Promise<WorkerPostReply> {
    if (job) return { accepted: true, status: job.status }
    return { accepted: false, status: (await this.deps.store.jobs.get(jobId))?.status }
  }

  /** Marks the job FAILED because its result could not be taken (too large, not JSON), so it never looks complete. */
  async rejectResult(workerId: string, jobId: string, why: string): Promise<void> {
    await this.deps.lifecycle.apply(jobId, 'fail', { error: `the worker's result was refused: ${why}` }, workerId)
  }

  /** job-stream: appends a chunk (split when over 1 MB) to a job running on this worker. */
  async streamChunk(workerId: string, jobId: string, body: unknown): Promise<WorkerPostReply> {
    const { store, events, workers } = this.deps
    workers.contact(workerId)
    if (typeof body !== 'object' || body === null || !('output' in body))
      throw new DomainError('bad_request', 'a stream post is {"output": <chunk>}')
    const job = await store.jobs.get(jobId)
    if (job?.status !== 'IN_PROGRESS' || job.workerId !== workerId)
      return { accepted: false, ...(job ? { status: job.status } : {}) }
    await store.jobs.appendChunks(jobId, splitChunk((body as { output: unknown }).output))
    events.jobChanged(jobId)
    return { accepted: true, status: job.status }
  }

  /**
   * ping: a heartbeat, listing the jobs the worker runs. A job the store has running on it that two of its
   * pings in a row leave out, after the grace, never reached it: the take's answer was lost (a control
   * plane killed between committing the take and answering it) or the worker dropped it (an SDK that
   * refuses the answer). It goes back to the queue instead of waiting for its execution timeout, counted
   * as a retry (so a job a broken worker keeps dropping fails after a few, with the reason), with a note in
   * its `error` while it waits, a line in the log, and a count that why-waiting reports once it repeats.
   * Two pings, because an SDK may drop a job from its list a moment before its result arrives; the move is
   * a compare-and-set, so a result that does arrive wins.
   */
  async ping(workerId: string, running: readonly string[]): Promise<void> {
    const { store, clock, lifecycle, workers } = this.deps
    workers.contact(workerId)
    const held = await store.jobs.listInProgress(workerId)
    if (running.length > 0 || this.strays.has(workerId)) await this.stopStrays(workerId, running, held)
    if (held.length === 0) return
    const now = clock.now()
    const listed = new Set(running)
    for (const job of held) {
      if (listed.has(job.id) || job.startedAt === null || now - job.startedAt < UNLISTED_GRACE_MS) {
        this.unlisted.delete(job.id)
        continue
      }
      if (!this.unlisted.has(job.id)) {
        if (this.unlisted.size > 100_000) this.unlisted.clear()
        this.unlisted.add(job.id)
        continue
      }
      this.unlisted.delete(job.id)
      const why = `its worker ${workerId} never acknowledged it (took it ${Math.round((now - job.startedAt) / 1000)} s ago; its pings do not list it): the job-take answer was lost, or the worker dropped it`
      await loseJob(lifecycle, job, { workerId, reason: why, counts: true, note: true })
      this.deps.dropped?.note(job.endpointId, workerId)
      this.deps.log?.info(
        { jobId: job.id, workerId, endpointId: job.endpointId, retries: job.retries + 1 },
        'job requeued: its worker never acknowledged it',
      )
    }
  }

  /**
   * Jobs a worker lists that it no longer runs here (cancelled, timed out, or taken back while its answer
   * was lost) and that one ping before listed too: it missed their stop, so it is sent again. The Python
   * SDK drops a stop that arrives between queueing a job and starting its task, and would otherwise run a
   * cancelled job to its end in a slot of its concurrency.
   */
  private async stopStrays(workerId: string, running: readonly string[], held: readonly JobRecord[]): Promise<void> {
    const heldIds = new Set(held.map((j) => j.id))
    const before = this.strays.get(workerId)
    const now = new Set(running.filter((id) => !heldIds.has(id)).slice(0, 100))
    if (now.size === 0) {
      if (before) this.strays.delete(workerId)
      return
    }
    if (this.strays.size > 10_000) this.strays.clear()
    this.strays.set(workerId, now)
    for (const id of now) {
      if (!before?.has(id)) continue
      const job = await this.deps.store.jobs.get(id)
      // A stop reaches only this worker's own channel; ids that name no job are not worth one.
      if (job) this.deps.events.requestStop(workerId, id)
    }
  }

  /** Per worker: the listed jobs its last ping listed that it does not run here (see stopStrays). */
  private readonly strays = new Map<string, Set<string>>()

  /** Jobs one ping of their worker left out (see ping). */
  private readonly unlisted = new Set<string>()
}

/** How long a job runs on a worker before its pings may count it as never received: far longer than a take's answer or a result post takes. */
const UNLISTED_GRACE_MS = 30_000

function toWorkerJob(j: TakenJob, secrets: SecretBox): WorkerJob {
  const job: WorkerJob = { id: j.id, input: j.input }
  if (j.webhook) job.webhook = j.webhook
  if (j.policy) job.policy = j.policy
  if (j.s3Config) job.s3Config = openS3Config(secrets, j.id, j.s3Config)
  return job
}
