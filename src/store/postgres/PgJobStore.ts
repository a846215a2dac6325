import type { JobStatus } from '../../contract/job.js'
import { jsonText, RawJson } from '../../domain/RawJson.js'
import type { JobCounts, JobPatch, JobRecord, JobStore } from '../JobStore.js'
import type { WebhookDelivery } from '../WebhookStore.js'
import type { PgGroupCommit } from './PgGroupCommit.js'
import { atomically, type PgQueryable } from './PgQueryable.js'
import { insertDelivery } from './PgWebhookStore.js'

type Row = Record<string, unknown>

const COLUMNS: Record<string, string> = {
  status: 'status',
  startedAt: 'started_at',
  completedAt: 'completed_at',
  expiresAt: 'expires_at',
  retainUntil: 'retain_until',
  workerId: 'worker_id',
  error: 'error',
  retries: 'retries',
  createdAt: 'created_at',
  ttlMs: 'ttl_ms',
  output: 'output',
  progress: 'progress',
}
const JSON_FIELDS = new Set(['output', 'progress'])
/** Every column but `input`: only take and get({ input: true }) read it (it may be 20 MB). */
const NO_INPUT = `id, endpoint_id, account_id, seq, status, webhook, policy, s3_config, sync, low_priority, execution_timeout_ms, ttl_ms,
  retention_ms, created_at, started_at, completed_at, expires_at, retain_until, worker_id, output, error, retries, progress, stream_cursor`
/**
 * The counts of one endpoint's jobs, derived from the table on every call (no in-process tally that another
 * replica's writes would make stale). FAILED counts TIMED_OUT too; `retried` sums every job kept.
 */
const COUNTS = `count(*) FILTER (WHERE status = 'IN_QUEUE') AS in_queue,
  count(*) FILTER (WHERE status = 'IN_QUEUE' AND low_priority) AS in_queue_low,
  count(*) FILTER (WHERE status = 'IN_PROGRESS') AS in_progress,
  count(*) FILTER (WHERE status = 'COMPLETED') AS completed,
  count(*) FILTER (WHERE status IN ('FAILED', 'TIMED_OUT')) AS failed,
  coalesce(sum(retries), 0) AS retried`
/** The first waiting normal-priority job in queue order is the oldest: seq and createdAt are set together. */
const OLDEST = (endpoint: string) => `(SELECT o.created_at FROM jobs o WHERE o.endpoint_id = ${endpoint} AND o.status = 'IN_QUEUE' AND NOT o.low_priority ORDER BY o.seq LIMIT 1) AS oldest`

/**
 * Jobs in PostgreSQL. The hot writes (submit, take, state moves) are group-committed (PgGroupCommit) and
 * resolve once committed; inside `Store.transaction` (no group commit given) they run on its connection.
 * Takers lock the rows they take with FOR UPDATE SKIP LOCKED, so takers on several connections or
 * replicas never wait on each other nor take one job twice.
 */
export class PgJobStore implements JobStore {
  constructor(
    private readonly q: PgQueryable,
    private readonly commits: PgGroupCommit | null,
  ) {}

  /** A write: group-committed on the pool, or at once on an open transaction. */
  private write<T>(op: (q: PgQueryable) => Promise<T>): Promise<T> {
    return this.commits ? this.commits.write(op) : op(this.q)
  }

  insert(job: JobRecord): Promise<void> {
    const values = [
      job.id,
      job.endpointId,
      job.accountId,
      job.status,
      jsonText(job.input),
      job.webhook,
      job.policy ? JSON.stringify(job.policy) : null,
      job.s3Config ? JSON.stringify(job.s3Config) : null,
      job.sync,
      job.lowPriority,
      job.executionTimeoutMs,
      job.ttlMs,
      job.retentionMs,
      job.createdAt,
      job.startedAt,
      job.completedAt,
      job.expiresAt,
      job.retainUntil,
      job.workerId,
      json(job.output),
      job.error,
      job.retries,
      json(job.progress),
    ]
    return this.write(async (q) => {
      await q.query(
        `INSERT INTO jobs (id, endpoint_id, account_id, status, input, webhook, policy, s3_config, sync, low_priority, execution_timeout_ms, ttl_ms, retention_ms,
           created_at, started_at, completed_at, expires_at, retain_until, worker_id, output, error, retries, progress)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)`,
        values,
      )
    })
  }

  async get(id: string, opts?: { input?: boolean }): Promise<JobRecord | undefined> {
    const { rows } = await this.q.query(`SELECT ${opts?.input ? '*' : NO_INPUT} FROM jobs WHERE id = $1`, [id])
    return rows.length ? toJob(rows[0]) : undefined
  }

  take(endpointId: string, workerId: string, max: number, now: number): Promise<JobRecord[]> {
    return this.write(async (q) => {
      const { rows } = await q.query(
        `WITH picked AS (
           SELECT id FROM jobs WHERE endpoint_id = $1 AND status = 'IN_QUEUE' AND expires_at > $3 ORDER BY low_priority, seq LIMIT $4 FOR UPDATE SKIP LOCKED
         )
         UPDATE jobs j SET status = 'IN_PROGRESS', worker_id = $2, started_at = $3, progress = NULL FROM picked WHERE j.id = picked.id RETURNING j.*`,
        [endpointId, workerId, now, max],
      )
      // RETURNING does not keep the subquery's order.
      rows.sort((a, b) => Number(a.low_priority) - Number(b.low_priority) || (a.seq as number) - (b.seq as number))
      return rows.map(toJob)
    })
  }

  transition(id: string, from: readonly JobStatus[], patch: JobPatch, workerId?: string, outbox?: (job: JobRecord) => WebhookDelivery | undefined): Promise<JobRecord | undefined> {
    const values: unknown[] = [id, [...from]]
    const sets: string[] = []
    for (const [key, col] of Object.entries(COLUMNS)) {
      if (!(key in patch)) continue
      const v = (patch as Record<string, unknown>)[key]
      sets.push(`${col} = $${values.push(JSON_FIELDS.has(key) ? json(v) : v)}`)
    }
    if (patch.requeueAtEnd) sets.push(`seq = nextval('job_queue_seq')`)
    if (patch.clearStream) sets.push('stream_cursor = 0')
    if (patch.retainFrom !== undefined) sets.push(`retain_until = $${values.push(patch.retainFrom)} + retention_ms`)
    if (sets.length === 0) sets.push('id = id')
    const onWorker = workerId !== undefined ? ` AND worker_id = $${values.push(workerId)}` : ''
    const sql = `UPDATE jobs SET ${sets.join(', ')} WHERE id = $1 AND status = ANY($2::text[])${onWorker} RETURNING ${NO_INPUT}`
    // One transaction: the move, its chunk cleanup and its webhook delivery stand or fall together.
    return this.write(async (q) => {
      const { rows } = await q.query(sql, values)
      if (rows.length === 0) return undefined
      if (patch.clearStream) await q.query('DELETE FROM job_chunks WHERE job_id = $1', [id])
      const job = toJob(rows[0])
      const delivery = outbox?.(job)
      if (delivery) await insertDelivery(q, delivery)
      return job
    })
  }

  async delete(id: string): Promise<boolean> {
    // Chunks go with the job (ON DELETE CASCADE).
    return ((await this.q.query('DELETE FROM jobs WHERE id = $1', [id])).rowCount ?? 0) > 0
  }

  async purgeQueued(endpointId: string): Promise<number> {
    return (await this.q.query(`DELETE FROM jobs WHERE endpoint_id = $1 AND status = 'IN_QUEUE'`, [endpointId])).rowCount ?? 0
  }

  async listExpired(now: number, limit: number): Promise<JobRecord[]> {
    // Two index scans, each bounded by `limit`, instead of an OR that scans the table.
    const { rows } = await this.q.query(
      `SELECT ${NO_INPUT} FROM jobs WHERE id IN (
         (SELECT id FROM jobs WHERE expires_at <= $1 LIMIT $2) UNION (SELECT id FROM jobs WHERE retain_until <= $1 LIMIT $2)
       ) LIMIT $2`,
      [now, limit],
    )
    return rows.map(toJob)
  }

  async listTimedOut(now: number, limit: number): Promise<JobRecord[]> {
    const { rows } = await this.q.query(`SELECT ${NO_INPUT} FROM jobs WHERE status = 'IN_PROGRESS' AND started_at + execution_timeout_ms <= $1 LIMIT $2`, [now, limit])
    return rows.map(toJob)
  }

  async listRecent(endpointId: string, limit: number): Promise<JobRecord[]> {
    return (await this.q.query(`SELECT ${NO_INPUT} FROM jobs WHERE endpoint_id = $1 ORDER BY seq DESC LIMIT $2`, [endpointId, limit])).rows.map(toJob)
  }

  async listInProgress(workerId?: string): Promise<JobRecord[]> {
    const r =
      workerId === undefined
        ? await this.q.query(`SELECT ${NO_INPUT} FROM jobs WHERE status = 'IN_PROGRESS' ORDER BY seq`)
        : await this.q.query(`SELECT ${NO_INPUT} FROM jobs WHERE status = 'IN_PROGRESS' AND worker_id = $1 ORDER BY seq`, [workerId])
    return r.rows.map(toJob)
  }

  async counts(endpointId: string): Promise<JobCounts> {
    const { rows } = await this.q.query(`SELECT ${COUNTS}, ${OLDEST('$1')} FROM jobs WHERE endpoint_id = $1`, [endpointId])
    return toCounts(rows[0])
  }

  async activeEndpoints(): Promise<Array<{ endpointId: string } & JobCounts>> {
    const { rows } = await this.q.query(
      `SELECT j.endpoint_id, ${COUNTS}, ${OLDEST('j.endpoint_id')} FROM jobs j
       WHERE j.endpoint_id IN (SELECT DISTINCT endpoint_id FROM jobs WHERE status IN ('IN_QUEUE', 'IN_PROGRESS'))
       GROUP BY j.endpoint_id ORDER BY j.endpoint_id`,
    )
    return rows.map((r) => ({ endpointId: r.endpoint_id as string, ...toCounts(r) }))
  }

  async appendChunks(jobId: string, outputs: unknown[]): Promise<void> {
    if (outputs.length === 0) return
    await atomically(this.q, async (q) => {
      // The job's row lock orders concurrent appends; each statement then sees the last one's chunks.
      await q.query('SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE', [jobId])
      await q.query(
        `INSERT INTO job_chunks (job_id, seq, output)
         SELECT $1, coalesce((SELECT max(seq) FROM job_chunks WHERE job_id = $1), 0) + t.n, t.output FROM unnest($2::text[]) WITH ORDINALITY AS t(output, n)`,
        [jobId, outputs.map((o) => JSON.stringify(o ?? null))],
      )
    })
  }

  readNewChunks(jobId: string, limit: number): Promise<unknown[]> {
    return atomically(this.q, async (q) => {
      const cursor = await q.query<{ stream_cursor: number }>('SELECT stream_cursor FROM jobs WHERE id = $1 FOR UPDATE', [jobId])
      if (cursor.rows.length === 0) return []
      const { rows } = await q.query<{ seq: number; output: string }>('SELECT seq, output FROM job_chunks WHERE job_id = $1 AND seq > $2 ORDER BY seq LIMIT $3', [jobId, cursor.rows[0].stream_cursor, limit])
      if (rows.length) await q.query('UPDATE jobs SET stream_cursor = $1 WHERE id = $2', [rows[rows.length - 1].seq, jobId])
      return rows.map((r) => JSON.parse(r.output) as unknown)
    })
  }

  async claimFinalOutput(jobId: string): Promise<boolean> {
    const r = await this.q.query('UPDATE jobs SET stream_cursor = 1 WHERE id = $1 AND stream_cursor = 0 AND NOT EXISTS (SELECT 1 FROM job_chunks WHERE job_id = $1)', [jobId])
    return (r.rowCount ?? 0) > 0
  }

  async chunkCount(jobId: string): Promise<number> {
    return (await this.q.query<{ n: number }>('SELECT count(*) AS n FROM job_chunks WHERE job_id = $1', [jobId])).rows[0].n
  }
}

function toCounts(r: Row): JobCounts {
  return {
    inQueue: r.in_queue as number,
    inQueueLow: r.in_queue_low as number,
    inProgress: r.in_progress as number,
    completed: r.completed as number,
    failed: r.failed as number,
    retried: r.retried as number,
    oldestQueuedAt: (r.oldest as number | null) ?? null,
  }
}

function json(v: unknown): string | null {
  return v === undefined ? null : jsonText(v)
}

function parse(v: unknown): unknown {
  return v === null || v === undefined ? undefined : JSON.parse(v as string)
}

/** A result as stored, not parsed: it is only sent on (status, webhook), so it stays text (see RawJson). */
function raw(v: unknown): RawJson | undefined {
  return v === null || v === undefined ? undefined : new RawJson(v as string)
}

function toJob(r: Row): JobRecord {
  return {
    id: r.id as string,
    endpointId: r.endpoint_id as string,
    accountId: r.account_id as string,
    status: r.status as JobStatus,
    input: r.input === undefined ? undefined : new RawJson(r.input as string),
    webhook: (r.webhook as string | null) ?? null,
    policy: (parse(r.policy) as Record<string, unknown> | undefined) ?? null,
    s3Config: (parse(r.s3_config) as Record<string, unknown> | undefined) ?? null,
    sync: r.sync === true,
    lowPriority: r.low_priority === true,
    executionTimeoutMs: r.execution_timeout_ms as number,
    ttlMs: r.ttl_ms as number,
    retentionMs: r.retention_ms as number,
    createdAt: r.created_at as number,
    startedAt: (r.started_at as number | null) ?? null,
    completedAt: (r.completed_at as number | null) ?? null,
    expiresAt: r.expires_at as number,
    retainUntil: (r.retain_until as number | null) ?? null,
    workerId: (r.worker_id as string | null) ?? null,
    output: raw(r.output),
    error: (r.error as string | null) ?? null,
    retries: r.retries as number,
    progress: raw(r.progress),
  }
}
