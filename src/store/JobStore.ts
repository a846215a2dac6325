import type { JobStatus } from '../contract/job.js'
import type { IdempotencyClaim, IdempotentInsert } from '../domain/jobs/idempotency.js'
import type { WebhookDelivery } from './WebhookStore.js'

/**
 * A job as stored. Times are epoch milliseconds from the service's clock. `output` is `undefined` when
 * the job has none (distinct from a `null` output).
 */
export interface JobRecord {
  id: string
  endpointId: string
  accountId: string
  status: JobStatus
  /**
   * The handler's input; read back as RawJson, and only by `take` and `get(id, { input: true })` (it is only
   * handed on to a worker, never looked into): other reads leave it undefined.
   */
  input: unknown
  webhook: string | null
  /** The policy as submitted (handed to the worker as is). */
  policy: Record<string, unknown> | null
  s3Config: Record<string, unknown> | null
  /** Submitted through /runsync. */
  sync: boolean
  lowPriority: boolean
  executionTimeoutMs: number
  ttlMs: number
  /** How long the result is kept after completion. */
  retentionMs: number
  createdAt: number
  startedAt: number | null
  completedAt: number | null
  /** TTL deadline: the job is deleted then, whatever its state. */
  expiresAt: number
  /** Set on completion: completedAt + retentionMs; the job is deleted then. */
  retainUntil: number | null
  workerId: string | null
  /** The result; read back as RawJson, like `progress` (only sent on, never looked into). */
  output: unknown
  error: string | null
  /** Times the job went back to the queue because its worker was lost. */
  retries: number
  /** The last progress update while running. */
  progress: unknown
}

/** Fields a transition may change; `output`/`progress` set to `undefined` clear them. */
export type JobPatch = Partial<
  Pick<
    JobRecord,
    | 'status'
    | 'startedAt'
    | 'completedAt'
    | 'expiresAt'
    | 'retainUntil'
    | 'workerId'
    | 'error'
    | 'retries'
    | 'createdAt'
    | 'ttlMs'
  >
> & {
  output?: unknown
  progress?: unknown
  /** Moves the job to the back of the queue (retry). */
  requeueAtEnd?: boolean
  /** Drops its stream chunks and read cursor (retry). */
  clearStream?: boolean
  /** Sets retainUntil to this time plus the job's retentionMs (completion). */
  retainFrom?: number
}

/** Counts of one endpoint's jobs, for /health and the scaler. */
export interface JobCounts {
  inQueue: number
  /** Of inQueue, the lowPriority ones. */
  inQueueLow: number
  inProgress: number
  completed: number
  failed: number
  /** Sum of `retries` over the jobs kept. */
  retried: number
  /** createdAt of the oldest waiting normal-priority job, or null. */
  oldestQueuedAt: number | null
}

/**
 * What a take returns of each job: what its worker receives, no more. Reading back the whole row (25 columns)
 * cost about as much as the move itself; the job's state after the take is known (IN_PROGRESS on the worker).
 */
export type TakenJob = Pick<JobRecord, 'id' | 'input' | 'webhook' | 'policy' | 's3Config'>

/** Storage of jobs and their stream chunks. Every write is durable when its promise resolves. */
export interface JobStore {
  /**
   * True when writes are applied in the order they are asked for, each seeing the ones before it even
   * before they commit (SQLite's group commit): a take asked right after an insert finds the job, and both
   * commit together. Elsewhere a job can be taken only once its insert has committed.
   */
  readonly writesInOrder?: boolean
  insert(job: JobRecord): Promise<void>
  /**
   * Inserts `job` only if its account and endpoint hold no live claim of `claim.key` (one whose expiresAt is
   * after the job's createdAt); claims the key for it in the same atomic step. Otherwise inserts nothing and
   * returns the job the key names. Concurrent calls with one key (any process) insert at most one job.
   */
  insertIdempotent(job: JobRecord, claim: IdempotencyClaim): Promise<IdempotentInsert>
  /** Deletes up to `limit` idempotency keys whose window ended at or before `now`; returns how many. */
  sweepIdempotencyKeys(now: number, limit: number): Promise<number>
  /** A job; its `input` only with `{ input: true }` (it may be 20 MB, and only a worker needs it). */
  get(id: string, opts?: { input?: boolean }): Promise<JobRecord | undefined>
  /**
   * Atomically moves up to `max` waiting jobs of an endpoint (normal priority first, then in submission
   * order) to IN_PROGRESS on `workerId`, so no job is ever handed out twice.
   */
  take(endpointId: string, workerId: string, max: number, now: number): Promise<TakenJob[]>
  /**
   * Compare-and-set: applies `patch` only while the job is in one of `from` (and, when given, on
   * `workerId`). Returns the updated job, or undefined when the condition did not hold. `outbox` may turn
   * the updated job into a webhook delivery, recorded atomically with the move (so a crash can lose
   * neither without the other).
   */
  transition(
    id: string,
    from: readonly JobStatus[],
    patch: JobPatch,
    workerId?: string,
    outbox?: (job: JobRecord) => WebhookDelivery | undefined,
  ): Promise<JobRecord | undefined>
  /** Deletes a job with its chunks; false when it did not exist. */
  delete(id: string): Promise<boolean>
  /** Deletes the waiting jobs of an endpoint; returns how many. */
  purgeQueued(endpointId: string): Promise<number>
  /** Jobs whose TTL or retention deadline is at or before `now`. */
  listExpired(now: number, limit: number): Promise<JobRecord[]>
  /** Running jobs whose execution timeout elapsed at or before `now`. */
  listTimedOut(now: number, limit: number): Promise<JobRecord[]>
  /** The latest `limit` jobs of an endpoint by submission (a retry counts as a new submission), newest first. */
  listRecent(endpointId: string, limit: number): Promise<JobRecord[]>
  /** Running jobs, of one worker or of all. */
  listInProgress(workerId?: string): Promise<JobRecord[]>
  counts(endpointId: string): Promise<JobCounts>
  /** Endpoints with waiting or running jobs, with their counts (the scaler's view of demand). */
  activeEndpoints(): Promise<Array<{ endpointId: string } & JobCounts>>
  /** Appends stream chunks in order. */
  appendChunks(jobId: string, outputs: unknown[]): Promise<void>
  /** Returns the chunks no earlier call returned and moves the job's read cursor past them. */
  readNewChunks(jobId: string, limit: number): Promise<unknown[]>
  /**
   * For a finished job that never streamed: true exactly once, so its output is given to /stream once.
   */
  claimFinalOutput(jobId: string): Promise<boolean>
  /** Number of chunks ever appended (0 for a job that never streamed). */
  chunkCount(jobId: string): Promise<number>
}
