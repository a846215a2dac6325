import type Database from 'better-sqlite3'
import type { JobStatus } from '../../contract/job.js'
import { jsonText, RawJson } from '../../domain/RawJson.js'
import type { JobCounts, JobPatch, JobRecord, JobStore, TakenJob } from '../JobStore.js'
import { COLUMNS, JSON_FIELDS, NO_INPUT, TAKEN_COLUMNS, toJob, toTaken } from '../rows.js'
import type { IdempotencyClaim, IdempotentInsert } from '../../domain/jobs/idempotency.js'
import type { WebhookDelivery } from '../WebhookStore.js'
import { GroupCommit } from './GroupCommit.js'
import { JobCounters, type Tally } from './JobCounters.js'
import type { SqliteWebhookStore } from './SqliteWebhookStore.js'
import type { TxGate } from './TxGate.js'

type Row = Record<string, unknown>

/** A prepared UPDATE of one patch shape, and the patch fields its first parameters take, in order. */
interface PatchStatement {
  stmt: Database.Statement
  fields: Array<[key: string, isJson: boolean]>
}

/**
 * A JSON column's value: a RawJson held as bytes (an input or result as it came) is stored as those bytes,
 * a BLOB read back as a Buffer, so no string of it is made; anything else as JSON text.
 */
function column(v: unknown): string | Buffer {
  return v instanceof RawJson && v.isBytes ? v.bytes : jsonText(v)
}

/** Inputs up to this size come back with the take's own statement; larger ones are read one by one. */
const INLINE_INPUT_BYTES = 64 * 1024
/** What a take returns of each job (see TakenJob), with its input when small (see INLINE_INPUT_BYTES). */
const TAKEN = `${TAKEN_COLUMNS}, CASE WHEN length(input) <= ${INLINE_INPUT_BYTES} THEN input END AS input, length(input) AS input_bytes`

function prepare(db: Database.Database) {
  return {
    // Positional parameters, in column order (see insert()): binding 24 named ones cost more than the row.
    insert:
      db.prepare(`INSERT INTO jobs (id, endpoint_id, account_id, seq, status, input, webhook, policy, s3_config, sync, low_priority,
        execution_timeout_ms, ttl_ms, retention_ms, created_at, started_at, completed_at, expires_at, retain_until, worker_id, output, error, retries, progress)
      VALUES (${Array(24).fill('?').join(', ')})`),
    get: db.prepare(`SELECT ${NO_INPUT} FROM jobs WHERE id = ?`),
    getWithInput: db.prepare('SELECT * FROM jobs WHERE id = ?'),
    // RETURNING gathers every row before the first is read: a large input comes back NULL (its size in
    // input_bytes) and is read alone afterwards (inputOf), so a batch of 20 MB inputs is not held twice at once.
    take: db.prepare(`UPDATE jobs SET status = 'IN_PROGRESS', worker_id = @workerId, started_at = @now, progress = NULL
      WHERE id IN (SELECT id FROM jobs WHERE endpoint_id = @endpointId AND status = 'IN_QUEUE' AND expires_at > @now ORDER BY low_priority, seq LIMIT @max)
      RETURNING ${TAKEN}`),
    // The same for one job (a worker of concurrency 1, the Python SDK's job-take): `= (subquery)` instead of
    // `IN (subquery)` spares SQLite the temporary table of the list, which cost 2 to 3 times the move itself.
    takeOne:
      db.prepare(`UPDATE jobs SET status = 'IN_PROGRESS', worker_id = @workerId, started_at = @now, progress = NULL
      WHERE id = (SELECT id FROM jobs WHERE endpoint_id = @endpointId AND status = 'IN_QUEUE' AND expires_at > @now ORDER BY low_priority, seq LIMIT 1)
      RETURNING ${TAKEN}`),
    inputOf: db.prepare('SELECT input FROM jobs WHERE id = ?').pluck(),
    delete: db.prepare('DELETE FROM jobs WHERE id = ? RETURNING endpoint_id, status, low_priority, retries'),
    before: db.prepare('SELECT status, retries FROM jobs WHERE id = ?'),
    deleteChunks: db.prepare('DELETE FROM job_chunks WHERE job_id = ?'),
    purge: db.prepare(`DELETE FROM jobs WHERE endpoint_id = ? AND status = 'IN_QUEUE'`),
    queuedTally: db.prepare(
      `SELECT low_priority AS low, count(*) AS n, coalesce(sum(retries), 0) AS retries FROM jobs WHERE endpoint_id = ? AND status = 'IN_QUEUE' GROUP BY low_priority`,
    ),
    expired: db.prepare(`SELECT ${NO_INPUT} FROM jobs WHERE expires_at <= @now OR retain_until <= @now LIMIT @limit`),
    timedOut: db.prepare(
      `SELECT ${NO_INPUT} FROM jobs WHERE status = 'IN_PROGRESS' AND started_at + execution_timeout_ms <= @now LIMIT @limit`,
    ),
    running: db.prepare(`SELECT ${NO_INPUT} FROM jobs WHERE status = 'IN_PROGRESS' ORDER BY seq`),
    recent: db.prepare(`SELECT ${NO_INPUT} FROM jobs WHERE endpoint_id = ? ORDER BY seq DESC LIMIT ?`),
    runningOn: db.prepare(`SELECT ${NO_INPUT} FROM jobs WHERE status = 'IN_PROGRESS' AND worker_id = ? ORDER BY seq`),
    // The first waiting job in queue order is the oldest: seq and createdAt are set together (submit, retry).
    oldest: db
      .prepare(
        `SELECT created_at FROM jobs WHERE endpoint_id = ? AND status = 'IN_QUEUE' AND low_priority = 0 ORDER BY seq LIMIT 1`,
      )
      .pluck(),
    appendChunk: db.prepare(
      `INSERT INTO job_chunks (job_id, seq, output) VALUES (@jobId, (SELECT coalesce(max(seq), 0) + 1 FROM job_chunks WHERE job_id = @jobId), @output)`,
    ),
    newChunks: db.prepare(
      `SELECT c.seq, c.output FROM job_chunks c JOIN jobs j ON j.id = c.job_id WHERE c.job_id = ? AND c.seq > j.stream_cursor ORDER BY c.seq LIMIT ?`,
    ),
    moveCursor: db.prepare('UPDATE jobs SET stream_cursor = ? WHERE id = ?'),
    claimFinal: db.prepare(
      'UPDATE jobs SET stream_cursor = 1 WHERE id = @id AND stream_cursor = 0 AND NOT EXISTS (SELECT 1 FROM job_chunks WHERE job_id = @id)',
    ),
    chunkCount: db.prepare('SELECT count(*) AS n FROM job_chunks WHERE job_id = ?'),
    keyHeld: db.prepare(
      'SELECT job_id, fingerprint, expires_at FROM idempotency_keys WHERE account_id = ? AND endpoint_id = ? AND key = ?',
    ),
    claimKey: db.prepare(
      `INSERT OR REPLACE INTO idempotency_keys (account_id, endpoint_id, key, fingerprint, job_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
    ),
    sweepKeys: db.prepare(
      'DELETE FROM idempotency_keys WHERE (account_id, endpoint_id, key) IN (SELECT account_id, endpoint_id, key FROM idempotency_keys WHERE expires_at <= ? LIMIT ?)',
    ),
  }
}

/**
 * Jobs in SQLite. better-sqlite3 runs each call synchronously, so every method is atomic on its own. The
 * hot writes (submit, take, state moves) are group-committed: their promises resolve once committed.
 */
export class SqliteJobStore implements JobStore {
  /** One connection, and the group commit runs writes in the order they were asked for. */
  readonly writesInOrder = true
  private readonly s: ReturnType<typeof prepare>
  private readonly patchStatements: Map<string, PatchStatement>
  /**
   * Shared by the transaction views: the counts, and the last queue position handed out. One process owns
   * the file (DataDirLock), so positions are handed out here instead of by a max(seq) subquery (which needed
   * an index on seq that every insert paid for).
   */
  private readonly shared: { counters: JobCounters; seq: number; txWrites: number }
  private readonly commits: GroupCommit
  /** Set on the view used inside `Store.transaction`: writes run at once, in the open transaction. */
  private readonly direct: boolean

  constructor(
    private readonly db: Database.Database,
    private readonly webhooks: SqliteWebhookStore,
    private readonly gate: TxGate | null = null,
    from?: SqliteJobStore,
  ) {
    this.direct = from !== undefined
    if (from) {
      this.s = from.s
      this.patchStatements = from.patchStatements
      this.shared = from.shared
      this.commits = from.commits
      return
    }
    this.patchStatements = new Map()
    this.s = prepare(db)
    const counters = new JobCounters(db)
    this.shared = { counters, seq: counters.maxSeq, txWrites: 0 }
    // A failed COMMIT undid the batch: recount from what the table really holds.
    this.commits = new GroupCommit(db, () => this.recount())
  }

  /** The view of this store for use inside an open transaction (writes join it instead of the group commit). */
  inTransaction(): SqliteJobStore {
    return new SqliteJobStore(this.db, this.webhooks, null, this)
  }

  /** A transaction opens: job writes made in it are counted, so its rollback recounts only when there were some. */
  transactionBegins(): void {
    this.shared.txWrites = 0
  }

  /** A transaction was rolled back: the counts are rebuilt if jobs were written in it (a scan of the table). */
  transactionRolledBack(): void {
    if (this.shared.txWrites > 0) this.recount()
  }

  /** Rebuilds the counts from the table, after a rollback undid writes they followed. */
  recount(): void {
    if (!this.db.open) return
    this.shared.counters = new JobCounters(this.db)
    // Never handed out twice: positions given to rolled-back rows stay unused.
    this.shared.seq = Math.max(this.shared.seq, this.shared.counters.maxSeq)
  }

  private get counters(): JobCounters {
    return this.shared.counters
  }

  /** Runs a write: group-committed, or at once inside an open transaction (in a savepoint when `atomic`). */
  private write<T>(run: () => T, atomic = false): Promise<T> {
    if (!this.direct) return this.commits.write(run, atomic)
    this.shared.txWrites++
    try {
      return Promise.resolve(atomic ? this.db.transaction(run)() : run())
    } catch (err) {
      return Promise.reject(err)
    }
  }

  /** Reads and ungrouped writes from outside wait while a transaction is open (see TxGate). */
  private async ready(): Promise<void> {
    if (this.gate?.busy) await this.gate.wait()
  }

  /** Commits the writes waiting for the next group commit (before the database closes). */
  flush(): void {
    this.commits.flush()
  }

  insert(job: JobRecord): Promise<void> {
    const insert = this.inserter(job)
    return this.write(insert)
  }

  insertIdempotent(job: JobRecord, claim: IdempotencyClaim): Promise<IdempotentInsert> {
    const insert = this.inserter(job)
    // One process owns the file and runs writes one at a time: the look-up and the two inserts are one step.
    return this.write((): IdempotentInsert => {
      const held = this.s.keyHeld.get(job.accountId, job.endpointId, claim.key) as
        | { job_id: string; fingerprint: string; expires_at: number }
        | undefined
      if (held && held.expires_at > job.createdAt)
        return { inserted: false, jobId: held.job_id, fingerprint: held.fingerprint }
      this.s.claimKey.run(
        job.accountId,
        job.endpointId,
        claim.key,
        claim.fingerprint,
        job.id,
        job.createdAt,
        claim.expiresAt,
      )
      insert()
      return { inserted: true }
    }, true)
  }

  async sweepIdempotencyKeys(now: number, limit: number): Promise<number> {
    await this.ready()
    return this.s.sweepKeys.run(now, limit).changes
  }

  /** The write that inserts `job`, its values converted beforehand (outside the writer's turn). */
  private inserter(job: JobRecord): () => void {
    const input = column(job.input)
    const policy = job.policy ? JSON.stringify(job.policy) : null
    const s3Config = job.s3Config ? JSON.stringify(job.s3Config) : null
    const output = job.output === undefined ? null : column(job.output)
    const progress = job.progress === undefined ? null : column(job.progress)
    return () => {
      // Numbered when it runs: the group commit runs writes in the order they were asked for.
      const seq = ++this.shared.seq
      this.s.insert.run(
        job.id,
        job.endpointId,
        job.accountId,
        seq,
        job.status,
        input,
        job.webhook,
        policy,
        s3Config,
        job.sync ? 1 : 0,
        job.lowPriority ? 1 : 0,
        job.executionTimeoutMs,
        job.ttlMs,
        job.retentionMs,
        job.createdAt,
        job.startedAt,
        job.completedAt,
        job.expiresAt,
        job.retainUntil,
        job.workerId,
        output,
        job.error,
        job.retries,
        progress,
      )
      this.counters.add(job)
    }
  }

  async get(id: string, opts?: { input?: boolean }): Promise<JobRecord | undefined> {
    if (this.gate?.busy) await this.ready()
    const row = (opts?.input ? this.s.getWithInput : this.s.get).get(id) as Row | undefined
    return row ? toJob(row) : undefined
  }

  /**
   * With no write waiting for the group commit (an insert among them would join this take's batch, see
   * `writesInOrder`) and no waiting job of the endpoint in the counts, there is nothing to take: answered
   * without a turn of the group commit (a worker asks again after every job, mostly finding none).
   */
  take(endpointId: string, workerId: string, max: number, now: number): Promise<TakenJob[]> {
    if (this.commits.idle && !this.counters.get(endpointId)?.inQueue) return Promise.resolve([])
    return this.write(() => {
      const rows = (
        max === 1
          ? this.s.takeOne.all({ endpointId, workerId, now })
          : this.s.take.all({ endpointId, workerId, now, max })
      ) as Row[]
      // RETURNING does not keep the subquery's order.
      rows.sort(
        (a, b) => (a.low_priority as number) - (b.low_priority as number) || (a.seq as number) - (b.seq as number),
      )
      for (const r of rows)
        if (r.input === null && (r.input_bytes as number) > INLINE_INPUT_BYTES) r.input = this.s.inputOf.get(r.id)
      for (const r of rows) {
        const counted = { endpointId, lowPriority: r.low_priority === 1, retries: r.retries as number }
        this.counters.move({ ...counted, status: 'IN_QUEUE' }, { ...counted, status: 'IN_PROGRESS' })
      }
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
    const { stmt, fields } = this.patchStatement(patch, from, workerId)
    // Positional, in the statement's order (see patchStatement): the SET values, then the WHERE's.
    const args: unknown[] = []
    for (const [key, isJson] of fields) {
      const v = (patch as Record<string, unknown>)[key]
      args.push(isJson ? (v === undefined ? null : column(v)) : v)
    }
    const seqAt = patch.requeueAtEnd ? args.push(0) - 1 : -1
    if (patch.retainFrom !== undefined) args.push(patch.retainFrom)
    args.push(id, ...from)
    if (workerId !== undefined) args.push(workerId)
    // What the counts need of the job before the move: known from `from` when it names one state.
    const counted = 'status' in patch || 'retries' in patch
    const known = from.length === 1 && !('retries' in patch)
    // The move, its chunk cleanup and its webhook delivery stand or fall together: in a savepoint of the
    // group commit when there can be more than the UPDATE (a single statement fails alone without one).
    const atomic = patch.clearStream === true || outbox !== undefined
    return this.write(() => {
      if (seqAt >= 0) args[seqAt] = ++this.shared.seq
      const before =
        counted && !known ? (this.s.before.get(id) as { status: JobStatus; retries: number } | undefined) : undefined
      const row = stmt.get(args) as Row | undefined
      if (!row) return undefined
      if (patch.clearStream) this.s.deleteChunks.run(id)
      const job = toJob(row)
      const delivery = outbox?.(job)
      if (delivery) this.webhooks.insertNow(delivery)
      if (counted) this.counters.move({ ...job, ...(known ? { status: from[0], retries: job.retries } : before!) }, job)
      return job
    }, atomic)
  }

  /**
   * The UPDATE for a patch of this shape (which fields, which source states, on a worker or not), prepared
   * once: callers use a handful of shapes, and building the SQL for every move cost more than running it.
   */
  private patchStatement(patch: JobPatch, from: readonly JobStatus[], workerId: string | undefined): PatchStatement {
    const shape = `${Object.keys(patch).join()}|${patch.requeueAtEnd ? 1 : 0}${patch.clearStream ? 1 : 0}${patch.retainFrom !== undefined ? 1 : 0}|${from.length}|${workerId === undefined ? 0 : 1}`
    let prepared = this.patchStatements.get(shape)
    if (prepared) return prepared
    const sets: string[] = []
    const fields: PatchStatement['fields'] = []
    for (const [key, col] of Object.entries(COLUMNS)) {
      if (!(key in patch)) continue
      sets.push(`${col} = ?`)
      fields.push([key, JSON_FIELDS.has(key)])
    }
    if (patch.requeueAtEnd) sets.push('seq = ?')
    if (patch.clearStream) sets.push('stream_cursor = 0')
    if (patch.retainFrom !== undefined) sets.push('retain_until = ? + retention_ms')
    if (sets.length === 0) sets.push('id = id')
    const sql = `UPDATE jobs SET ${sets.join(', ')} WHERE id = ? AND status IN (${from.map(() => '?').join(', ')})${workerId !== undefined ? ' AND worker_id = ?' : ''} RETURNING ${NO_INPUT}`
    prepared = { stmt: this.db.prepare(sql), fields }
    this.patchStatements.set(shape, prepared)
    return prepared
  }

  async delete(id: string): Promise<boolean> {
    if (this.gate?.busy) await this.ready()
    if (this.direct) this.shared.txWrites++
    const row = this.s.delete.get(id) as
      | { endpoint_id: string; status: JobStatus; low_priority: number; retries: number }
      | undefined
    if (row)
      this.counters.add(
        { endpointId: row.endpoint_id, status: row.status, lowPriority: row.low_priority === 1, retries: row.retries },
        -1,
      )
    return row !== undefined
  }

  async purgeQueued(endpointId: string): Promise<number> {
    if (this.gate?.busy) await this.ready()
    if (this.direct) this.shared.txWrites++
    // Counted, then deleted, in one transaction; no row comes back into memory (a purge can remove a million jobs).
    const purge = this.db.transaction(() => {
      const tally = this.s.queuedTally.all(endpointId) as Array<{ low: number; n: number; retries: number }>
      const removed = this.s.purge.run(endpointId).changes
      return { tally, removed }
    })
    const { tally, removed } = purge()
    for (const t of tally)
      this.counters.bulk({ endpointId, status: 'IN_QUEUE', lowPriority: t.low === 1, retries: t.retries }, -t.n)
    return removed
  }

  async listExpired(now: number, limit: number): Promise<JobRecord[]> {
    if (this.gate?.busy) await this.ready()
    return (this.s.expired.all({ now, limit }) as Row[]).map(toJob)
  }

  async listTimedOut(now: number, limit: number): Promise<JobRecord[]> {
    if (this.gate?.busy) await this.ready()
    return (this.s.timedOut.all({ now, limit }) as Row[]).map(toJob)
  }

  async listRecent(endpointId: string, limit: number): Promise<JobRecord[]> {
    if (this.gate?.busy) await this.ready()
    return (this.s.recent.all(endpointId, limit) as Row[]).map(toJob)
  }

  async listInProgress(workerId?: string): Promise<JobRecord[]> {
    if (this.gate?.busy) await this.ready()
    const rows = (workerId === undefined ? this.s.running.all() : this.s.runningOn.all(workerId)) as Row[]
    return rows.map(toJob)
  }

  async counts(endpointId: string): Promise<JobCounts> {
    if (this.gate?.busy) await this.ready()
    return this.countsOf(endpointId, this.counters.get(endpointId))
  }

  async activeEndpoints(): Promise<Array<{ endpointId: string } & JobCounts>> {
    if (this.gate?.busy) await this.ready()
    const out: Array<{ endpointId: string } & JobCounts> = []
    for (const [endpointId, t] of this.counters.entries())
      if (t.inQueue + t.inProgress > 0) out.push({ endpointId, ...this.countsOf(endpointId, t) })
    return out
  }

  private countsOf(endpointId: string, t: Tally | undefined): JobCounts {
    if (!t)
      return { inQueue: 0, inQueueLow: 0, inProgress: 0, completed: 0, failed: 0, retried: 0, oldestQueuedAt: null }
    const oldest = t.inQueue > t.inQueueLow ? ((this.s.oldest.get(endpointId) as number | undefined) ?? null) : null
    return {
      inQueue: t.inQueue,
      inQueueLow: t.inQueueLow,
      inProgress: t.inProgress,
      completed: t.completed,
      failed: t.failed,
      retried: t.retried,
      oldestQueuedAt: oldest,
    }
  }

  async appendChunks(jobId: string, outputs: unknown[]): Promise<void> {
    if (this.gate?.busy) await this.ready()
    this.db.transaction(() => {
      for (const output of outputs) this.s.appendChunk.run({ jobId, output: JSON.stringify(output ?? null) })
    })()
  }

  async readNewChunks(jobId: string, limit: number): Promise<unknown[]> {
    if (this.gate?.busy) await this.ready()
    return this.db.transaction(() => {
      const rows = this.s.newChunks.all(jobId, limit) as Array<{ seq: number; output: string }>
      if (rows.length) this.s.moveCursor.run(rows[rows.length - 1].seq, jobId)
      return rows.map((r) => JSON.parse(r.output) as unknown)
    })()
  }

  async claimFinalOutput(jobId: string): Promise<boolean> {
    if (this.gate?.busy) await this.ready()
    return this.s.claimFinal.run({ id: jobId }).changes > 0
  }

  async chunkCount(jobId: string): Promise<number> {
    if (this.gate?.busy) await this.ready()
    return (this.s.chunkCount.get(jobId) as { n: number }).n
  }
}
