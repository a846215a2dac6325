import type pg from 'pg'
import { isRetryable, type PgQueryable } from './PgQueryable.js'

type Op = (q: PgQueryable) => Promise<unknown>

/** Writes of one kind that a batch runs as one statement (one round trip) instead of one each. */
export interface Mergeable<I, R> {
  /** Writes with the same key merge. */
  key: string
  item: I
  /** Runs every item of the batch at once; returns one result per item, in order. */
  runMany: (q: PgQueryable, items: I[]) => Promise<R[]>
}

interface Pending {
  op: Op
  merge?: Mergeable<unknown, unknown>
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

  /** Queues a write that merges with the others of its key in the batch (see Mergeable). */
  writeMerged<I, R>(merge: Mergeable<I, R>): Promise<R> {
    const m = merge as unknown as Mergeable<unknown, unknown>
    return new Promise<R>((resolve, reject) => {
      this.pending.push({
        op: async (q) => (await m.runMany(q, [m.item]))[0],
        merge: m,
        resolve: resolve as (v: unknown) => void,
        reject,
      })
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
      const values: unknown[] = new Array(batch.length)
      // Mergeable writes run as one statement per key, at the place of the first of them.
      const groups = new Map<string, number[]>()
      batch.forEach((w, i) => {
        if (!w.merge || batch.length === 1) return
        const g = groups.get(w.merge.key)
        if (g) g.push(i)
        else groups.set(w.merge.key, [i])
      })
      for (let i = 0; i < batch.length; i++) {
        const w = batch[i]
        const group = w.merge && groups.get(w.merge.key)
        if (!group) values[i] = await w.op(client)
        else if (group[0] === i) {
          const results = await w.merge!.runMany(
            client,
            group.map((j) => batch[j].merge!.item),
          )
          group.forEach((j, k) => (values[j] = results[k]))
        }
      }
      await client.query('COMMIT')
      return { ok: true, values }
    } catch (error) {
      // A ROLLBACK that fails means the connection broke; the error that matters is the one returned below.
      await client.query('ROLLBACK').catch(() => {})
      return { ok: false, error }
    } finally {
      client.release()
    }
  }
}
