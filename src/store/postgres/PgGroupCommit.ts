import type pg from 'pg'
import { isRetryable, type PgQueryable } from './PgQueryable.js'

type Op = (q: PgQueryable) => Promise<unknown>

interface Pending {
  op: Op
  resolve: (value: unknown) => void
  reject: (error: unknown) => void
}

/** Times a batch (or a lone write) is run again after a deadlock or serialization failure. */
const RETRIES = 5

/**
 * Group commit for PostgreSQL, like the SQLite GroupCommit: the writes requested during one turn of the event
 * loop run one after another in one transaction on one connection, and every promise settles only after the
 * COMMIT, so a caller answers only for committed changes while a burst of N writes costs one commit (one WAL
 * flush) instead of N. At most `maxBatches` transactions are open at once; writes arriving meanwhile wait
 * and join the next batch, which therefore grows with the load.
 *
 * PostgreSQL aborts the whole transaction when one statement fails (SQLite undoes just the statement). So
 * when a batch fails it is rolled back and each of its writes is run again alone, in a transaction of its
 * own: the failing one rejects with its own error, the others commit. A write must therefore be safe to run
 * again after a rollback (store calls only; nothing outside the database).
 */
export class PgGroupCommit {
  private pending: Pending[] = []
  private running = 0
  private scheduled = false
  private idle: Array<() => void> = []

  constructor(
    private readonly pool: pg.Pool,
    private readonly maxBatches = 2,
  ) {}

  /** Queues `op` for the next batch; resolves with its result once committed. */
  write<T>(op: (q: PgQueryable) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ op, resolve: resolve as (v: unknown) => void, reject })
      this.schedule()
    })
  }

  /** Resolves once nothing is pending or running (before the pool closes). */
  async drain(): Promise<void> {
    while (this.pending.length > 0 || this.running > 0) await new Promise<void>((r) => this.idle.push(r))
  }

  private schedule(): void {
    if (this.scheduled || this.running >= this.maxBatches || this.pending.length === 0) return
    this.scheduled = true
    // setImmediate, not a microtask: requests parsed in the same turn of the event loop share the commit.
    setImmediate(() => {
      this.scheduled = false
      if (this.running >= this.maxBatches || this.pending.length === 0) return
      const batch = this.pending
      this.pending = []
      this.running++
      void this.commit(batch).finally(() => {
        this.running--
        this.schedule()
        if (this.pending.length === 0 && this.running === 0) for (const r of this.idle.splice(0)) r()
      })
    })
  }

  private async commit(batch: Pending[]): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const outcome = await this.runBatch(batch)
      if (outcome.ok) {
        batch.forEach((w, i) => w.resolve(outcome.values[i]))
        return
      }
      if (isRetryable(outcome.error) && attempt < RETRIES) continue
      if (batch.length === 1) {
        batch[0].reject(outcome.error)
        return
      }
      // One write spoiled the batch: each runs alone, so only it fails.
      await Promise.all(batch.map((w) => this.commit([w])))
      return
    }
  }

  private async runBatch(batch: Pending[]): Promise<{ ok: true; values: unknown[] } | { ok: false; error: unknown }> {
    let client: pg.PoolClient
    try {
      client = await this.pool.connect()
    } catch (error) {
      return { ok: false, error }
    }
    try {
      await client.query('BEGIN')
      const values: unknown[] = []
      for (const w of batch) values.push(await w.op(client))
      await client.query('COMMIT')
      return { ok: true, values }
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {})
      return { ok: false, error }
    } finally {
      client.release()
    }
  }
}
