import type {
  Health,
  JobRef,
  JobRequest,
  JobStatusView,
  PurgeResult,
  RequestList,
  StreamView,
  WebhookDeliveryView,
} from '../../contract/job.js'
import { iso, type Clock } from '../../domain/clock.js'
import type { EndpointRecord } from '../../domain/endpoints/endpoint.js'
import { DomainError, notFound } from '../../domain/errors.js'
import { isFinal, retentionMs } from '../../domain/jobs/jobState.js'
import { jobStatusView, visibleError } from '../../domain/jobs/jobView.js'
import { jobUuid } from '../../domain/jobs/jobUuid.js'
import { keyInFlight, keyReused, submissionFingerprint } from '../../domain/jobs/idempotency.js'
import type { JobRecord } from '../../store/JobStore.js'
import type { Store } from '../../store/Store.js'
import type { WebhookDelivery } from '../../store/WebhookStore.js'
import type { Principal } from '../accounts/AccountService.js'
import type { JobEvents, Subscription } from './JobEvents.js'
import type { JobLifecycle } from './JobLifecycle.js'
import { sealS3Config } from './s3Secret.js'
import type { SecretBox } from '../SecretBox.js'

/** Defaults of the spec: 24 h TTL, 10 min execution timeout (when the endpoint sets none), 90 s runsync wait. */
export const DEFAULT_TTL_MS = 86_400_000
export const DEFAULT_EXECUTION_TIMEOUT_MS = 600_000
export const DEFAULT_SYNC_WAIT_MS = 90_000
const STREAM_BATCH = 10_000

/** A webhook delivery as /status shows it. */
function deliveryView(d: WebhookDelivery): WebhookDeliveryView {
  return {
    id: d.id,
    url: d.url,
    state: d.state,
    attempts: d.attempts.map((a) => ({
      at: iso(a.at),
      statusCode: a.statusCode,
      error: a.error,
      durationMs: a.durationMs,
    })),
    nextAttemptAt: d.nextAttemptAt === null ? null : iso(d.nextAttemptAt),
  }
}

/** A job `enqueue` stored: its id, and for a /runsync the subscription to its changes, opened before the insert. */
interface Stored {
  stored: string
  sub?: Subscription
}

/** Worker counters of an endpoint for /health. */
export type WorkerHealth = Health['workers']

export interface JobServiceDeps {
  store: Store
  clock: Clock
  events: JobEvents
  lifecycle: JobLifecycle
  /** Worker counters of an endpoint (from the worker service). */
  workerHealth: (endpointId: string) => WorkerHealth
  /** Why a waiting job is not running yet (from the autoscaler), added to its status as `waitingReason`. */
  waitingReason?: (job: JobRecord) => string | undefined
  /** How long /stream holds a request with nothing new, unless `?wait=` says otherwise. */
  streamWaitMs: number
  /** Seals a job's `s3Config.accessSecret` before it is stored. */
  secrets: SecretBox
  /** How long an Idempotency-Key names its job (default 24 h). */
  idempotencyWindowMs?: number
}

/** How JobService.submit takes a job. */
export interface SubmitOptions {
  /** A /runsync: the call waits for a final state (up to `waitMs`), and the job is kept only briefly after. */
  sync?: boolean
  /** How long a /runsync waits for a final state before answering with the job as it is (default 90 s). */
  waitMs?: number
  /** The client's Idempotency-Key: a repeat of the same submission answers with the job it made. */
  idempotencyKey?: string
}

/**
 * The queue operations clients call under /v2/{endpointId}: submit, status, stream, cancel, retry, purge,
 * health. Jobs are committed before the reply; waiting (runsync, status-sync, stream) sleeps on JobEvents.
 * A job of another endpoint, or one whose TTL or retention elapsed, is answered as missing (404).
 */
export class JobService {
  /**
   * Idempotent submissions being accepted in this process, by endpoint and key, with their fingerprints: a
   * duplicate arriving meanwhile is a 409 (the draft's "concurrent request") instead of a wait. Across
   * replicas the store's unique key orders them.
   */
  private readonly accepting = new Map<string, string>()

  constructor(private readonly deps: JobServiceDeps) {}

  /** True while the control plane shuts down: waits end at once, so callers should not come back. */
  get closing(): boolean {
    return this.deps.events.closed
  }

  /**
   * POST /run and /runsync (`sync`: waits up to `waitMs` for a final state). With an `idempotencyKey`, a
   * submission repeating an earlier one (same key, operation and body, within the window) answers with that
   * job instead of making another. Not async itself: once the job is stored, nothing of this call holds
   * `body` (a /runsync input can be 20 MB, and its call waits for the result), so the input is kept once, in
   * the store, until a worker takes it.
   *
   * @example jobs.submit(principal, endpointId, { input }, { sync: true, waitMs: 0 })
   */
  submit(p: Principal, endpointId: string, body: JobRequest, o: SubmitOptions & { sync: true }): Promise<JobStatusView>
  submit(p: Principal, endpointId: string, body: JobRequest, o?: SubmitOptions & { sync?: false }): Promise<JobRef>
  submit(p: Principal, endpointId: string, body: JobRequest, o?: SubmitOptions): Promise<JobRef | JobStatusView>
  submit(p: Principal, endpointId: string, body: JobRequest, o: SubmitOptions = {}): Promise<JobRef | JobStatusView> {
    const queued = this.enqueue(p, endpointId, body, o)
    return queued.then((r) => {
      if (!('stored' in r)) return r
      return o.sync
        ? this.waitFinal(r.stored, o.waitMs ?? DEFAULT_SYNC_WAIT_MS, r.sub)
        : { id: r.stored, status: 'IN_QUEUE' as const }
    })
  }

  /**
   * Stores a submitted job: its id (with, for a /runsync, the subscription to its changes opened before its
   * insert), or the answer of the earlier job an idempotent repeat names.
   */
  private async enqueue(
    p: Principal,
    endpointId: string,
    body: JobRequest,
    o: SubmitOptions,
  ): Promise<Stored | JobRef | JobStatusView> {
    const { idempotencyKey, waitMs } = o
    const sync = o.sync ?? false
    const ep = await this.endpoint(p, endpointId)
    // The schema checks that it is a URI (one error for "notaurl"); only http(s) can be POSTed to.
    if (body.webhook !== undefined && !/^https?:\/\//i.test(body.webhook)) {
      throw new DomainError(
        'bad_request',
        `webhook: must be an http or https URL, got ${JSON.stringify(body.webhook)}`,
        [`webhook: must be an http or https URL, got ${JSON.stringify(body.webhook)}`],
      )
    }
    const now = this.deps.clock.now()
    const ttlMs = body.policy?.ttl ?? DEFAULT_TTL_MS
    // Time-ordered UUIDs (v7): the jobs table's id index grows at its end (see jobUuid).
    const id = sync ? `sync-${jobUuid()}` : jobUuid()
    const job: JobRecord = {
      id,
      endpointId: ep.id,
      accountId: ep.accountId,
      status: 'IN_QUEUE',
      input: body.input,
      webhook: body.webhook ?? null,
      policy: body.policy ?? null,
      // Kept only in the database, and sealed there: a copy of the database alone does not reveal it.
      s3Config: body.s3Config ? sealS3Config(this.deps.secrets, id, body.s3Config) : null,
      sync,
      lowPriority: body.policy?.lowPriority ?? false,
      // The job's policy overrides the endpoint's timeout, which overrides the spec's default.
      executionTimeoutMs: body.policy?.executionTimeout ?? ep.timeout ?? DEFAULT_EXECUTION_TIMEOUT_MS,
      ttlMs,
      retentionMs: retentionMs(sync, waitMs),
      createdAt: now,
      startedAt: null,
      completedAt: null,
      expiresAt: now + ttlMs,
      retainUntil: null,
      workerId: null,
      output: undefined,
      error: null,
      retries: 0,
      progress: undefined,
    }
    if (idempotencyKey === undefined) {
      // Listening from before the insert, the wait misses no change (a waiting worker may take the job as
      // it is stored) and needs no read of the job until one comes.
      const sub = sync ? this.deps.events.subscribe(`job:${id}`) : undefined
      try {
        await this.deps.lifecycle.enqueue(job)
      } catch (err) {
        sub?.close()
        throw err
      }
      return { stored: id, sub }
    }
    const original = await this.enqueueOnce(job, body, idempotencyKey)
    if (original !== undefined) return this.replay(ep, original, idempotencyKey, o)
    return { stored: id }
  }

  /** Enqueues `job` under `key`, or returns the id of the job an identical earlier submission made. */
  private async enqueueOnce(job: JobRecord, body: JobRequest, key: string): Promise<string | undefined> {
    const fingerprint = submissionFingerprint(job.sync ? 'runsync' : 'run', body)
    const flight = `${job.endpointId}\n${key}`
    const busy = this.accepting.get(flight)
    if (busy !== undefined) throw busy === fingerprint ? keyInFlight(key) : keyReused(key, undefined)
    this.accepting.set(flight, fingerprint)
    try {
      const r = await this.deps.lifecycle.enqueueIdempotent(job, {
        key,
        fingerprint,
        expiresAt: job.createdAt + (this.deps.idempotencyWindowMs ?? DEFAULT_TTL_MS),
      })
      if (r.inserted) return undefined
      if (r.fingerprint !== fingerprint) throw keyReused(key, r.jobId)
      return r.jobId
    } finally {
      this.accepting.delete(flight)
    }
  }

  /** The answer to a repeated submission: the original job as it is now (for /runsync, once final or after the wait). */
  private async replay(
    ep: EndpointRecord,
    jobId: string,
    key: string,
    o: SubmitOptions,
  ): Promise<JobRef | JobStatusView> {
    const job = await this.deps.store.jobs.get(jobId)
    if (!job || job.endpointId !== ep.id || this.expired(job)) {
      throw new DomainError(
        'not_found',
        `job ${JSON.stringify(jobId)}, submitted earlier with Idempotency-Key ${JSON.stringify(key)}, is no longer kept (its TTL or result retention elapsed); it is not run again: send a new key to submit it anew`,
      )
    }
    if (!o.sync) return { id: job.id, status: job.status }
    return this.waitFinal(job.id, o.waitMs ?? DEFAULT_SYNC_WAIT_MS)
  }

  /** GET /status/{id}; `ttlMs` replaces the job's time-to-live (from submission, also keeping a result that long). */
  async status(p: Principal, endpointId: string, jobId: string, ttlMs?: number): Promise<JobStatusView> {
    const ep = await this.endpoint(p, endpointId)
    let job = await this.job(ep, jobId)
    if (ttlMs !== undefined) {
      job = await this.deps.lifecycle.setTtl(job, ttlMs)
      if (job.createdAt + ttlMs <= this.deps.clock.now()) throw notFound('job', jobId)
    }
    const view = this.view(job)
    // Only a job with a webhook has deliveries to look up: other status reads cost no extra query.
    if (job.webhook !== null)
      view.webhookDeliveries = (await this.deps.store.webhooks.listForJob(job.id)).map(deliveryView)
    return view
  }

  /** GET /status-sync/{id}: like /status, but waits up to `waitMs` for a final state. */
  async statusSync(
    p: Principal,
    endpointId: string,
    jobId: string,
    waitMs = DEFAULT_SYNC_WAIT_MS,
  ): Promise<JobStatusView> {
    await this.job(await this.endpoint(p, endpointId), jobId)
    return this.waitFinal(jobId, waitMs)
  }

  /**
   * GET /stream/{id}: the chunks no earlier call returned. While there are none and the job still runs,
   * the request is held up to `waitMs`. A job that finished without streaming gives its output once.
   */
  async stream(p: Principal, endpointId: string, jobId: string, waitMs = this.deps.streamWaitMs): Promise<StreamView> {
    const ep = await this.endpoint(p, endpointId)
    const { store, events } = this.deps
    const sub = events.subscribe(`job:${jobId}`)
    try {
      const deadline = Date.now() + waitMs
      for (;;) {
        const job = await this.job(ep, jobId)
        const chunks = await store.jobs.readNewChunks(jobId, STREAM_BATCH)
        const view: StreamView = { id: job.id, status: job.status, stream: chunks.map((output) => ({ output })) }
        const error = visibleError(job)
        if (error !== null) view.error = error
        if (chunks.length > 0) return view
        if (isFinal(job.status)) {
          if (job.status === 'COMPLETED' && job.output !== undefined && (await store.jobs.claimFinalOutput(jobId)))
            view.stream = [{ output: job.output }]
          return view
        }
        const left = deadline - Date.now()
        if (left <= 0 || events.closed) return view
        await sub.wait(left)
      }
    } finally {
      sub.close()
    }
  }

  /** POST /cancel/{id}: a waiting job is removed from the queue, a running one is stopped in its worker. */
  async cancel(p: Principal, endpointId: string, jobId: string): Promise<JobRef> {
    const job = await this.job(await this.endpoint(p, endpointId), jobId)
    const cancelled = await this.deps.lifecycle.apply(job.id, 'cancel')
    if (cancelled) return { id: job.id, status: 'CANCELLED' }
    // Already final: cancelling changes nothing; say what it is.
    const now = await this.deps.store.jobs.get(job.id)
    return { id: job.id, status: now?.status ?? job.status }
  }

  /** POST /retry/{id}: a FAILED or TIMED_OUT job goes back to the queue under the same id, with its input. */
  async retry(p: Principal, endpointId: string, jobId: string): Promise<JobRef> {
    const job = await this.job(await this.endpoint(p, endpointId), jobId)
    if (job.status !== 'FAILED' && job.status !== 'TIMED_OUT') {
      throw new DomainError(
        'bad_request',
        `job ${JSON.stringify(jobId)} is ${job.status}; only FAILED or TIMED_OUT jobs can be retried`,
      )
    }
    const now = this.deps.clock.now()
    // A retry is a resubmission: its TTL and delay count from now.
    const retried = await this.deps.lifecycle.apply(job.id, 'retry', {
      output: undefined,
      progress: undefined,
      error: null,
      startedAt: null,
      completedAt: null,
      retainUntil: null,
      workerId: null,
      retries: 0,
      createdAt: now,
      expiresAt: now + job.ttlMs,
      requeueAtEnd: true,
      clearStream: true,
    })
    if (!retried)
      throw new DomainError(
        'bad_request',
        `job ${JSON.stringify(jobId)} changed state meanwhile; only FAILED or TIMED_OUT jobs can be retried`,
      )
    return { id: job.id, status: 'IN_QUEUE' }
  }

  /** POST /purge-queue: removes the waiting jobs; running ones continue. */
  async purgeQueue(p: Principal, endpointId: string): Promise<PurgeResult> {
    const ep = await this.endpoint(p, endpointId)
    return { removed: await this.deps.lifecycle.purgeQueued(ep.id), status: 'completed' }
  }

  /** GET /health: job counters over the jobs kept, and worker counters. */
  async health(p: Principal, endpointId: string): Promise<Health> {
    const ep = await this.endpoint(p, endpointId)
    const c = await this.deps.store.jobs.counts(ep.id)
    return {
      jobs: {
        completed: c.completed,
        failed: c.failed,
        inProgress: c.inProgress,
        inQueue: c.inQueue,
        retried: c.retried,
      },
      workers: this.deps.workerHealth(ep.id),
    }
  }

  /**
   * GET /requests: the endpoint's recent requests (its jobs still kept), newest first, with status, times
   * and worker; inputs and outputs are left out (they can be large; /status has them).
   */
  async requests(p: Principal, endpointId: string, limit = 100): Promise<RequestList> {
    const ep = await this.endpoint(p, endpointId)
    const jobs = (await this.deps.store.jobs.listRecent(ep.id, limit)).filter((j) => !this.expired(j))
    return {
      requests: jobs.map((j) => {
        const v = jobStatusView(j)
        return {
          id: j.id,
          status: j.status,
          createdAt: iso(j.createdAt),
          startedAt: j.startedAt === null ? null : iso(j.startedAt),
          completedAt: j.completedAt === null ? null : iso(j.completedAt),
          ...(v.delayTime !== undefined ? { delayTime: v.delayTime } : {}),
          ...(v.executionTime !== undefined ? { executionTime: v.executionTime } : {}),
          workerId: j.workerId,
          retries: j.retries,
          sync: j.sync,
          ...(v.error !== undefined ? { error: v.error } : {}),
        }
      }),
    }
  }

  /**
   * Waits on JobEvents until the job is final, `waitMs` passed, or the service is closing. A final state
   * told with the job record (see JobEvents.jobChanged) is answered from it, without reading it back. With
   * `fresh`, the subscription opened before the job was stored, the job is known to wait in the queue until
   * an event says otherwise.
   */
  private async waitFinal(jobId: string, waitMs: number, fresh?: Subscription): Promise<JobStatusView> {
    const { store, events } = this.deps
    const sub = fresh ?? events.subscribe(`job:${jobId}`)
    try {
      const deadline = Date.now() + waitMs
      if (fresh) await sub.wait(waitMs)
      const first = fresh && sub.takeJob()
      let job = first && isFinal(first.status) ? first : await store.jobs.get(jobId)
      for (;;) {
        if (!job || this.expired(job)) throw notFound('job', jobId)
        const left = deadline - Date.now()
        if (isFinal(job.status) || left <= 0 || events.closed) return jobStatusView(job)
        await sub.wait(left)
        const told = sub.takeJob()
        job = told && isFinal(told.status) ? told : await store.jobs.get(jobId)
      }
    } finally {
      sub.close()
    }
  }

  /** The /status object, with why it waits while it is IN_QUEUE (runsync keeps the documented shape). */
  private view(job: JobRecord): JobStatusView {
    const view = jobStatusView(job)
    const why = job.status === 'IN_QUEUE' ? this.deps.waitingReason?.(job) : undefined
    if (why) view.waitingReason = why
    return view
  }

  private async endpoint(p: Principal, id: string): Promise<EndpointRecord> {
    const ep = await this.deps.store.endpoints.get(id)
    if (!ep || ep.accountId !== p.accountId) throw notFound('endpoint', id)
    if (ep.type !== 'QUEUE')
      throw new DomainError(
        'bad_request',
        `endpoint ${JSON.stringify(id)} is a ${ep.type} endpoint: it has no job queue; send requests to its base URL`,
      )
    return ep
  }

  private async job(ep: EndpointRecord, id: string): Promise<JobRecord> {
    const job = await this.deps.store.jobs.get(id)
    if (!job || job.endpointId !== ep.id || this.expired(job)) throw notFound('job', id)
    return job
  }

  /** Past its TTL or retention, a job is gone even before the sweep deletes it. */
  private expired(job: JobRecord): boolean {
    const now = this.deps.clock.now()
    return job.expiresAt <= now || (job.retainUntil !== null && job.retainUntil <= now)
  }
}
