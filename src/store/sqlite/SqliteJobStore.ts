import type Database from 'better-sqlite3'
import type { JobStatus } from '../../contract/job.js'
import type { JobCounts, JobPatch, JobRecord, JobStore } from '../JobStore.js'
import type { WebhookDelivery } from '../WebhookStore.js'
import type { SqliteWebhookStore } from './SqliteWebhookStore.js'

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
const NEXT_SEQ = '(SELECT coalesce(max(seq), 0) + 1 FROM jobs)'

/** Jobs in SQLite. better-sqlite3 runs each call synchronously, so every method is atomic on its own. */
export class SqliteJobStore implements JobStore {
  private readonly s
  private readonly patchStatements = new Map<string, Database.Statement>()

  constructor(
    private readonly db: Database.Database,
    private readonly webhooks: SqliteWebhookStore,
  ) {
    this.s = {
      insert: db.prepare(`INSERT INTO jobs (id, endpoint_id, account_id, seq, status, input, webhook, policy, s3_config, sync, low_priority,
          execution_timeout_ms, ttl_ms, retention_ms, created_at, started_at, completed_at, expires_at, retain_until, worker_id, output, error, retries, progress)
        VALUES (@id, @endpointId, @accountId, ${NEXT_SEQ}, @status, @input, @webhook, @policy, @s3Config, @sync, @lowPriority,
          @executionTimeoutMs, @ttlMs, @retentionMs, @createdAt, @startedAt, @completedAt, @expiresAt, @retainUntil, @workerId, @output, @error, @retries, @progress)`),
      get: db.prepare('SELECT * FROM jobs WHERE id = ?'),
      take: db.prepare(`UPDATE jobs SET status = 'IN_PROGRESS', worker_id = @workerId, started_at = @now, progress = NULL
        WHERE id IN (SELECT id FROM jobs WHERE endpoint_id = @endpointId AND status = 'IN_QUEUE' AND expires_at > @now ORDER BY low_priority, seq LIMIT @max)
        RETURNING *`),
      delete: db.prepare('DELETE FROM jobs WHERE id = ?'),
      deleteChunks: db.prepare('DELETE FROM job_chunks WHERE job_id = ?'),
      purge: db.prepare(`DELETE FROM jobs WHERE endpoint_id = ? AND status = 'IN_QUEUE' RETURNING id`),
      expired: db.prepare('SELECT * FROM jobs WHERE expires_at <= @now OR retain_until <= @now LIMIT @limit'),
      timedOut: db.prepare(`SELECT * FROM jobs WHERE status = 'IN_PROGRESS' AND started_at + execution_timeout_ms <= @now LIMIT @limit`),
      running: db.prepare(`SELECT * FROM jobs WHERE status = 'IN_PROGRESS' ORDER BY seq`),
      runningOn: db.prepare(`SELECT * FROM jobs WHERE status = 'IN_PROGRESS' AND worker_id = ? ORDER BY seq`),
      counts: db.prepare(`SELECT status, low_priority AS low, count(*) AS n, sum(retries) AS retried, min(created_at) AS oldest
        FROM jobs WHERE endpoint_id = ? GROUP BY status, low_priority`),
      active: db.prepare(`SELECT endpoint_id, status, low_priority AS low, count(*) AS n, sum(retries) AS retried, min(created_at) AS oldest
        FROM jobs WHERE status IN ('IN_QUEUE', 'IN_PROGRESS') GROUP BY endpoint_id, status, low_priority`),
      appendChunk: db.prepare(`INSERT INTO job_chunks (job_id, seq, output) VALUES (@jobId, (SELECT coalesce(max(seq), 0) + 1 FROM job_chunks WHERE job_id = @jobId), @output)`),
      newChunks: db.prepare(`SELECT c.seq, c.output FROM job_chunks c JOIN jobs j ON j.id = c.job_id WHERE c.job_id = ? AND c.seq > j.stream_cursor ORDER BY c.seq LIMIT ?`),
      moveCursor: db.prepare('UPDATE jobs SET stream_cursor = ? WHERE id = ?'),
      claimFinal: db.prepare('UPDATE jobs SET stream_cursor = 1 WHERE id = @id AND stream_cursor = 0 AND NOT EXISTS (SELECT 1 FROM job_chunks WHERE job_id = @id)'),
      chunkCount: db.prepare('SELECT count(*) AS n FROM job_chunks WHERE job_id = ?'),
    }
  }

  async insert(job: JobRecord): Promise<void> {
    this.s.insert.run({
      ...job,
      input: JSON.stringify(job.input),
      policy: job.policy ? JSON.stringify(job.policy) : null,
      s3Config: job.s3Config ? JSON.stringify(job.s3Config) : null,
      sync: job.sync ? 1 : 0,
      lowPriority: job.lowPriority ? 1 : 0,
      output: json(job.output),
      progress: json(job.progress),
    })
  }

  async get(id: string): Promise<JobRecord | undefined> {
    const row = this.s.get.get(id) as Row | undefined
    return row ? toJob(row) : undefined
  }

  async take(endpointId: string, workerId: string, max: number, now: number): Promise<JobRecord[]> {
    const rows = this.s.take.all({ endpointId, workerId, now, max }) as Row[]
    // RETURNING does not keep the subquery's order.
    rows.sort((a, b) => (a.low_priority as number) - (b.low_priority as number) || (a.seq as number) - (b.seq as number))
    return rows.map(toJob)
  }

  async transition(id: string, from: readonly JobStatus[], patch: JobPatch, workerId?: string, outbox?: (job: JobRecord) => WebhookDelivery | undefined): Promise<JobRecord | undefined> {
    const sets: string[] = []
    const params: Record<string, unknown> = { id, workerIdCond: workerId ?? null }
    for (const [key, col] of Object.entries(COLUMNS)) {
      if (!(key in patch)) continue
      const v = (patch as Record<string, unknown>)[key]
      sets.push(`${col} = @p_${key}`)
      params[`p_${key}`] = JSON_FIELDS.has(key) ? json(v) : v
    }
    if (patch.requeueAtEnd) sets.push(`seq = ${NEXT_SEQ}`)
    if (patch.clearStream) sets.push('stream_cursor = 0')
    if (patch.retainFrom !== undefined) {
      sets.push('retain_until = @retainFrom + retention_ms')
      params.retainFrom = patch.retainFrom
    }
    if (sets.length === 0) sets.push('id = id')
    from.forEach((s, i) => (params[`from${i}`] = s))
    const sql = `UPDATE jobs SET ${sets.join(', ')} WHERE id = @id AND status IN (${from.map((_, i) => `@from${i}`).join(', ')})${workerId !== undefined ? ' AND worker_id = @workerIdCond' : ''} RETURNING *`
    let stmt = this.patchStatements.get(sql)
    if (!stmt) this.patchStatements.set(sql, (stmt = this.db.prepare(sql)))
    if (workerId === undefined) delete params.workerIdCond
    const run = this.db.transaction(() => {
      const row = stmt!.get(params) as Row | undefined
      if (!row) return undefined
      if (patch.clearStream) this.s.deleteChunks.run(id)
      const job = toJob(row)
      const delivery = outbox?.(job)
      if (delivery) this.webhooks.insertNow(delivery)
      return job
    })
    return run()
  }

  async delete(id: string): Promise<boolean> {
    return this.s.delete.run(id).changes > 0
  }

  async purgeQueued(endpointId: string): Promise<string[]> {
    return (this.s.purge.all(endpointId) as Array<{ id: string }>).map((r) => r.id)
  }

  async listExpired(now: number, limit: number): Promise<JobRecord[]> {
    return (this.s.expired.all({ now, limit }) as Row[]).map(toJob)
  }

  async listTimedOut(now: number, limit: number): Promise<JobRecord[]> {
    return (this.s.timedOut.all({ now, limit }) as Row[]).map(toJob)
  }

  async listInProgress(workerId?: string): Promise<JobRecord[]> {
    const rows = (workerId === undefined ? this.s.running.all() : this.s.runningOn.all(workerId)) as Row[]
    return rows.map(toJob)
  }

  async counts(endpointId: string): Promise<JobCounts> {
    return foldCounts(this.s.counts.all(endpointId) as CountRow[])
  }

  async activeEndpoints(): Promise<Array<{ endpointId: string } & JobCounts>> {
    const byEndpoint = new Map<string, CountRow[]>()
    for (const r of this.s.active.all() as Array<CountRow & { endpoint_id: string }>) {
      const list = byEndpoint.get(r.endpoint_id) ?? []
      list.push(r)
      byEndpoint.set(r.endpoint_id, list)
    }
    return [...byEndpoint].map(([endpointId, rows]) => ({ endpointId, ...foldCounts(rows) }))
  }

  async appendChunks(jobId: string, outputs: unknown[]): Promise<void> {
    this.db.transaction(() => {
      for (const output of outputs) this.s.appendChunk.run({ jobId, output: JSON.stringify(output ?? null) })
    })()
  }

  async readNewChunks(jobId: string, limit: number): Promise<unknown[]> {
    return this.db.transaction(() => {
      const rows = this.s.newChunks.all(jobId, limit) as Array<{ seq: number; output: string }>
      if (rows.length) this.s.moveCursor.run(rows[rows.length - 1].seq, jobId)
      return rows.map((r) => JSON.parse(r.output) as unknown)
    })()
  }

  async claimFinalOutput(jobId: string): Promise<boolean> {
    return this.s.claimFinal.run({ id: jobId }).changes > 0
  }

  async chunkCount(jobId: string): Promise<number> {
    return (this.s.chunkCount.get(jobId) as { n: number }).n
  }
}

interface CountRow {
  status: JobStatus
  low: number
  n: number
  retried: number | null
  oldest: number | null
}

function foldCounts(rows: CountRow[]): JobCounts {
  const c: JobCounts = { inQueue: 0, inQueueLow: 0, inProgress: 0, completed: 0, failed: 0, retried: 0, oldestQueuedAt: null }
  for (const r of rows) {
    c.retried += r.retried ?? 0
    if (r.status === 'IN_QUEUE') {
      c.inQueue += r.n
      if (r.low) c.inQueueLow += r.n
      else c.oldestQueuedAt = r.oldest
    } else if (r.status === 'IN_PROGRESS') c.inProgress += r.n
    else if (r.status === 'COMPLETED') c.completed += r.n
    else if (r.status === 'FAILED' || r.status === 'TIMED_OUT') c.failed += r.n
  }
  return c
}

function json(v: unknown): string | null {
  return v === undefined ? null : JSON.stringify(v)
}

function parse(v: unknown): unknown {
  return v === null || v === undefined ? undefined : JSON.parse(v as string)
}

function toJob(r: Row): JobRecord {
  return {
    id: r.id as string,
    endpointId: r.endpoint_id as string,
    accountId: r.account_id as string,
    status: r.status as JobStatus,
    input: JSON.parse(r.input as string),
    webhook: (r.webhook as string | null) ?? null,
    policy: (parse(r.policy) as Record<string, unknown> | undefined) ?? null,
    s3Config: (parse(r.s3_config) as Record<string, unknown> | undefined) ?? null,
    sync: r.sync === 1,
    lowPriority: r.low_priority === 1,
    executionTimeoutMs: r.execution_timeout_ms as number,
    ttlMs: r.ttl_ms as number,
    retentionMs: r.retention_ms as number,
    createdAt: r.created_at as number,
    startedAt: (r.started_at as number | null) ?? null,
    completedAt: (r.completed_at as number | null) ?? null,
    expiresAt: r.expires_at as number,
    retainUntil: (r.retain_until as number | null) ?? null,
    workerId: (r.worker_id as string | null) ?? null,
    output: parse(r.output),
    error: (r.error as string | null) ?? null,
    retries: r.retries as number,
    progress: parse(r.progress),
  }
}
