import pg from 'pg'
import type { JobStatus } from '../../contract/job.js'
import { jsonText } from '../../domain/RawJson.js'
import type { JobCounts, JobPatch, JobRecord, JobStore, TakenJob } from '../JobStore.js'
import { COLUMNS, json, JSON_FIELDS, NO_INPUT, TAKEN_COLUMNS, toJob, toTaken } from '../rows.js'
import type { IdempotencyClaim, IdempotentInsert } from '../../domain/jobs/idempotency.js'
import type { WebhookDelivery } from '../WebhookStore.js'
import type { PgGroupCommit } from './PgGroupCommit.js'
import { atomically, type PgQueryable } from './PgQueryable.js'
import { insertDelivery } from './PgWebhookStore.js'

type Row = Record<string, unknown>

/**
 * The counts of one endpoint's jobs: the sum of its rows in job_counts, which triggers on jobs keep in step
 * with every statement that writes jobs, on any replica (migration 070). FAILED counts TIMED_OUT too;
 * `retried` sums every job kept. `rows` says how many rows were summed (see FOLD_AT).
 */
const COUNTS = `coalesce(sum(c.in_queue), 0) AS in_queue,
  coalesce(sum(c.in_queue_low), 0) AS in_queue_low,
  coalesce(sum(c.in_progress), 0) AS in_progress,
  coalesce(sum(c.completed), 0) AS completed,
  coalesce(sum(c.failed), 0) AS failed,
  coalesce(sum(c.retried), 0) AS retried,
  count(*) AS rows`
/** An endpoint whose counts were summed from more rows than this has them folded into one. */
const FOLD_AT = 32
/** The first waiting normal-priority job in queue order is the oldest: seq and createdAt are set together. */
const OLDEST = (endpoint: string) =>
  `(SELECT o.created_at FROM jobs o WHERE o.endpoint_id = ${endpoint} AND o.status = 'IN_QUEUE' AND NOT o.low_priority ORDER BY o.seq LIMIT 1) AS oldest`

/** What a take returns of each job (see TakenJob): the columns of the updated row, not those of `picked`. */
const TAKEN = `${TAKEN_COLUMNS.split(', ')
  .map((c) => `j.${c}`)
  .join(', ')}, j.input`

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
    const row = jobRow(job)
    if (!this.commits) return insertJobs(this.q, [row]).then(([err]) => (err ? Promise.reject(err) : undefined))
    // The submissions of one batch go in as one multi-row INSERT (a burst of /run costs one statement).
    return this.commits
      .writeMerged({ key: 'jobs.insert', item: row, runMany: insertJobs })
      .then((err) => (err ? Promise.reject(err) : undefined))
  }

  async insertIdempotent(job: JobRecord, claim: IdempotencyClaim): Promise<IdempotentInsert> {
    // One statement, outside the group commit: it may wait on another replica's claim of the key (the
    // primary key's lock), which must not hold up a batch of other submissions, and it is atomic alone.
    // A live claim (expires_at after now) is left alone (DO UPDATE ... WHERE false): no row, no job.
    const params = [...jobRow(job), claim.key, claim.fingerprint, claim.expiresAt]
    const n = INSERT_WIDTH
    const { rows } = await this.q.query<{ id: string }>(
      `WITH claim AS (
         INSERT INTO idempotency_keys (account_id, endpoint_id, key, fingerprint, job_id, created_at, expires_at)
         VALUES ($3, $2, $${n + 1}, $${n + 2}, $1, $14, $${n + 3})
         ON CONFLICT (account_id, endpoint_id, key) DO UPDATE
           SET fingerprint = EXCLUDED.fingerprint, job_id = EXCLUDED.job_id, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
           WHERE idempotency_keys.expires_at <= EXCLUDED.created_at
         RETURNING job_id
       )
       INSERT INTO jobs (${INSERT_COLUMNS}) SELECT ${INSERT_TYPES.map((t, c) => `$${c + 1}::${t}`).join(', ')} FROM claim RETURNING id`,
      params,
    )
    if (rows.length > 0) return { inserted: true }
    const held = await this.q.query<{ job_id: string; fingerprint: string }>(
      'SELECT job_id, fingerprint FROM idempotency_keys WHERE account_id = $1 AND endpoint_id = $2 AND key = $3',
      [job.accountId, job.endpointId, claim.key],
    )
    // Swept between the two statements (its window just ended): claim it afresh.
    if (held.rows.length === 0) return this.insertIdempotent(job, claim)
    return { inserted: false, jobId: held.rows[0].job_id, fingerprint: held.rows[0].fingerprint }
  }

  async sweepIdempotencyKeys(now: number, limit: number): Promise<number> {
    const r = await this.q.query(
      'DELETE FROM idempotency_keys WHERE ctid IN (SELECT ctid FROM idempotency_keys WHERE expires_at <= $1 LIMIT $2)',
      [now, limit],
    )
    return r.rowCount ?? 0
  }

  async get(id: string, opts?: { input?: boolean }): Promise<JobRecord | undefined> {
    const { rows } = await this.q.query(`SELECT ${opts?.input ? '*' : NO_INPUT} FROM jobs WHERE id = $1`, [id])
    return rows.length ? toJob(rows[0]) : undefined
  }

  take(endpointId: string, workerId: string, max: number, now: number): Promise<TakenJob[]> {
    return this.write(async (q) => {
      const { rows } = await q.query(
        `WITH picked AS (
           SELECT id FROM jobs WHERE endpoint_id = $1 AND status = 'IN_QUEUE' AND expires_at > $3 ORDER BY low_priority, seq LIMIT $4 FOR UPDATE SKIP LOCKED
         )
         UPDATE jobs j SET status = 'IN_PROGRESS', worker_id = $2, started_at = $3, progress = NULL FROM picked WHERE j.id = picked.id
         RETURNING ${TAKEN}`,
        [endpointId, workerId, now, max],
      )
      // RETURNING does not keep the subquery's order.
      rows.sort((a, b) => Number(a.low_priority) - Number(b.low_priority) || (a.seq as number) - (b.seq as number))
      return rows.map(toTaken)
    })
  }

  transition(
    id: string,
    from: readonly JobStatus[],
    patch: JobPatch,
    workerId?: string,
    outbox?: (job: JobRecord) => WebhookDelivery | undefined,
  ): Promise<JobRecord | undefined> {
    const fields = Object.keys(COLUMNS).filter((k) => k in patch)
    const shape = `${fields.join()}|${patch.requeueAtEnd ? 1 : 0}${patch.clearStream ? 1 : 0}${patch.retainFrom !== undefined ? 1 : 0}|${workerId === undefined ? 0 : 1}`
    const values: unknown[] = [
      id,
      [...from],
      ...fields.map((k) =>
        JSON_FIELDS.has(k) ? json((patch as Record<string, unknown>)[k]) : (patch as Record<string, unknown>)[k],
      ),
    ]
    if (patch.retainFrom !== undefined) values.push(patch.retainFrom)
    if (workerId !== undefined) values.push(workerId)
    const move: Move = { values, clearStream: patch.clearStream === true, outbox }
    const runMany = (q: PgQueryable, moves: Move[]) => runMoves(q, shape, fields, patch, workerId !== undefined, moves)
    if (!this.commits) return runMany(this.q, [move]).then(([job]) => job)
    // Moves of one shape in a batch (a burst of completions) run as one UPDATE.
    return this.commits.writeMerged({ key: `jobs.transition:${shape}`, item: move, runMany })
  }

  async delete(id: string): Promise<boolean> {
    // Chunks go with the job (ON DELETE CASCADE).
    return ((await this.q.query('DELETE FROM jobs WHERE id = $1', [id])).rowCount ?? 0) > 0
  }

  async purgeQueued(endpointId: string): Promise<number> {
    return (
      (await this.q.query(`DELETE FROM jobs WHERE endpoint_id = $1 AND status = 'IN_QUEUE'`, [endpointId])).rowCount ??
      0
    )
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
    const { rows } = await this.q.query(
      `SELECT ${NO_INPUT} FROM jobs WHERE status = 'IN_PROGRESS' AND started_at + execution_timeout_ms <= $1 LIMIT $2`,
      [now, limit],
    )
    return rows.map(toJob)
  }

  async listRecent(endpointId: string, limit: number): Promise<JobRecord[]> {
    return (
      await this.q.query(`SELECT ${NO_INPUT} FROM jobs WHERE endpoint_id = $1 ORDER BY seq DESC LIMIT $2`, [
        endpointId,
        limit,
      ])
    ).rows.map(toJob)
  }

  async listInProgress(workerId?: string): Promise<JobRecord[]> {
    const r =
      workerId === undefined
        ? await this.q.query(`SELECT ${NO_INPUT} FROM jobs WHERE status = 'IN_PROGRESS' ORDER BY seq`)
        : await this.q.query(
            `SELECT ${NO_INPUT} FROM jobs WHERE status = 'IN_PROGRESS' AND worker_id = $1 ORDER BY seq`,
            [workerId],
          )
    return r.rows.map(toJob)
  }

  async counts(endpointId: string): Promise<JobCounts> {
    const { rows } = await this.q.query(
      `SELECT ${COUNTS}, ${OLDEST('$1')} FROM job_counts c WHERE c.endpoint_id = $1`,
      [endpointId],
    )
    if ((rows[0].rows as number) > FOLD_AT) await this.fold([endpointId])
    return toCounts(rows[0])
  }

  async activeEndpoints(): Promise<Array<{ endpointId: string } & JobCounts>> {
    const { rows } = await this.q.query(
      `SELECT c.endpoint_id, ${COUNTS}, ${OLDEST('c.endpoint_id')} FROM job_counts c
       GROUP BY c.endpoint_id HAVING sum(c.in_queue) > 0 OR sum(c.in_progress) > 0 ORDER BY c.endpoint_id`,
    )
    const many = rows.filter((r) => (r.rows as number) > FOLD_AT).map((r) => r.endpoint_id as string)
    if (many.length) await this.fold(many)
    return rows.map((r) => ({ endpointId: r.endpoint_id as string, ...toCounts(r) }))
  }

  /**
   * Folds the job_counts rows of endpoints into one row each (same sums). Concurrent folds (other replicas)
   * are safe: a row deleted by one is skipped by the other, rows added meanwhile stay. Only outside a
   * transaction, and best effort: a fold that fails (a deadlock between two folds) leaves the rows as they were.
   */
  private async fold(endpointIds: string[]): Promise<void> {
    if (!(this.q instanceof pg.Pool)) return
    await this.q
      .query(
        `WITH d AS (DELETE FROM job_counts WHERE endpoint_id = ANY($1) RETURNING *)
         INSERT INTO job_counts SELECT endpoint_id, sum(in_queue), sum(in_queue_low), sum(in_progress), sum(completed), sum(failed), sum(retried) FROM d GROUP BY endpoint_id`,
        [endpointIds],
      )
      // Best effort (see above): the next read folds again, and the sums are right either way.
      .catch(() => {})
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
      const cursor = await q.query<{ stream_cursor: number }>(
        'SELECT stream_cursor FROM jobs WHERE id = $1 FOR UPDATE',
        [jobId],
      )
      if (cursor.rows.length === 0) return []
      const { rows } = await q.query<{ seq: number; output: string }>(
        'SELECT seq, output FROM job_chunks WHERE job_id = $1 AND seq > $2 ORDER BY seq LIMIT $3',
        [jobId, cursor.rows[0].stream_cursor, limit],
      )
      if (rows.length)
        await q.query('UPDATE jobs SET stream_cursor = $1 WHERE id = $2', [rows[rows.length - 1].seq, jobId])
      return rows.map((r) => JSON.parse(r.output) as unknown)
    })
  }

  async claimFinalOutput(jobId: string): Promise<boolean> {
    const r = await this.q.query(
      'UPDATE jobs SET stream_cursor = 1 WHERE id = $1 AND stream_cursor = 0 AND NOT EXISTS (SELECT 1 FROM job_chunks WHERE job_id = $1)',
      [jobId],
    )
    return (r.rowCount ?? 0) > 0
  }

  async chunkCount(jobId: string): Promise<number> {
    return (await this.q.query<{ n: number }>('SELECT count(*) AS n FROM job_chunks WHERE job_id = $1', [jobId]))
      .rows[0].n
  }
}

/** One job's compare-and-set move: its parameters in the order runMoves binds them. */
interface Move {
  values: unknown[]
  clearStream: boolean
  outbox?: (job: JobRecord) => WebhookDelivery | undefined
}

/** The SQL type of each patchable column, for the VALUES list of a merged move. */
const COLUMN_TYPE: Record<string, string> = {
  status: 'text',
  startedAt: 'bigint',
  completedAt: 'bigint',
  expiresAt: 'bigint',
  retainUntil: 'bigint',
  workerId: 'text',
  error: 'text',
  retries: 'integer',
  createdAt: 'bigint',
  ttlMs: 'bigint',
  output: 'text',
  progress: 'text',
}

/**
 * Runs moves of one shape: one UPDATE ... FROM (VALUES ...) for all of them, each row applying only where
 * its job is in one of its `from` states (and on its worker). A job named twice in the batch is moved one
 * call after the other instead, so the second sees the first. Then each moved job's chunk cleanup and
 * webhook delivery, in the same transaction.
 */
async function runMoves(
  q: PgQueryable,
  shape: string,
  fields: string[],
  patch: JobPatch,
  onWorker: boolean,
  moves: Move[],
): Promise<Array<JobRecord | undefined>> {
  const ids = moves.map((m) => m.values[0] as string)
  if (new Set(ids).size < ids.length) {
    const out: Array<JobRecord | undefined> = []
    for (const m of moves) out.push(...(await runMoves(q, shape, fields, patch, onWorker, [m])))
    return out
  }
  const cols = [
    'id',
    'from_states',
    ...fields.map((f) => `p_${f}`),
    ...(patch.retainFrom !== undefined ? ['retain_from'] : []),
    ...(onWorker ? ['on_worker'] : []),
  ]
  const types = [
    'text',
    'text[]',
    ...fields.map((f) => COLUMN_TYPE[f]),
    ...(patch.retainFrom !== undefined ? ['bigint'] : []),
    ...(onWorker ? ['text'] : []),
  ]
  const params: unknown[] = []
  const tuples = moves.map((m) => `(${m.values.map((v, c) => `$${params.push(v)}::${types[c]}`).join(', ')})`)
  const sets = fields.map((f) => `${COLUMNS[f]} = v.p_${f}`)
  if (patch.requeueAtEnd) sets.push(`seq = nextval('job_queue_seq')`)
  if (patch.clearStream) sets.push('stream_cursor = 0')
  if (patch.retainFrom !== undefined) sets.push('retain_until = v.retain_from + j.retention_ms')
  if (sets.length === 0) sets.push('id = j.id')
  const { rows } = await q.query(
    `UPDATE jobs j SET ${sets.join(', ')} FROM (VALUES ${tuples.join(', ')}) AS v(${cols.join(', ')})
     WHERE j.id = v.id AND j.status = ANY(v.from_states)${onWorker ? ' AND j.worker_id = v.on_worker' : ''} RETURNING ${NO_INPUT.replace(/(\w+)/g, 'j.$1')}`,
    params,
  )
  const byId = new Map(rows.map((r) => [r.id as string, toJob(r)]))
  const out: Array<JobRecord | undefined> = []
  for (const m of moves) {
    const job = byId.get(m.values[0] as string)
    out.push(job)
    if (!job) continue
    if (m.clearStream) await q.query('DELETE FROM job_chunks WHERE job_id = $1', [job.id])
    const delivery = m.outbox?.(job)
    if (delivery) await insertDelivery(q, delivery)
  }
  return out
}

/** A job's values in INSERT_COLUMNS order. */
function jobRow(job: JobRecord): unknown[] {
  return [
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
}

const INSERT_COLUMNS = `id, endpoint_id, account_id, status, input, webhook, policy, s3_config, sync, low_priority, execution_timeout_ms, ttl_ms, retention_ms,
  created_at, started_at, completed_at, expires_at, retain_until, worker_id, output, error, retries, progress`
const INSERT_WIDTH = 23
/** The SQL types of INSERT_COLUMNS, for an INSERT ... SELECT whose parameters have no column to take a type from. */
const INSERT_TYPES = [
  'text',
  'text',
  'text',
  'text',
  'text',
  'text',
  'text',
  'text',
  'boolean',
  'boolean',
  'bigint',
  'bigint',
  'bigint',
  'bigint',
  'bigint',
  'bigint',
  'bigint',
  'bigint',
  'text',
  'text',
  'text',
  'integer',
  'text',
]

/**
 * Inserts jobs (rows of INSERT_COLUMNS values) in one statement, in order (seq follows the row order). A job
 * whose id exists gets a unique-violation error of its own, as a lone INSERT would; the others go in.
 */
async function insertJobs(q: PgQueryable, rows: unknown[][]): Promise<Array<Error | undefined>> {
  // A statement takes at most 65,535 parameters.
  if (rows.length > 1000)
    return [...(await insertJobs(q, rows.slice(0, 1000))), ...(await insertJobs(q, rows.slice(1000)))]
  const tuples = rows.map(
    (_, r) => `(${Array.from({ length: INSERT_WIDTH }, (_, c) => `$${r * INSERT_WIDTH + c + 1}`).join(', ')})`,
  )
  const { rows: inserted } = await q.query<{ id: string }>(
    `INSERT INTO jobs (${INSERT_COLUMNS}) VALUES ${tuples.join(', ')} ON CONFLICT (id) DO NOTHING RETURNING id`,
    rows.flat(),
  )
  const ok = new Set(inserted.map((r) => r.id))
  const seen = new Set<string>()
  return rows.map((row) => {
    const id = row[0] as string
    const first = !seen.has(id)
    seen.add(id)
    return ok.has(id) && first
      ? undefined
      : Object.assign(new Error(`duplicate key value violates unique constraint "jobs_pkey": job ${id} exists`), {
          code: '23505',
        })
  })
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
