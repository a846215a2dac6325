import type Database from 'better-sqlite3'

interface Pending {
  run: () => unknown
  atomic: boolean
  resolve: (value: unknown) => void
  reject: (error: unknown) => void
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown }

/**
 * Group commit: the writes requested during one turn of the event loop run together in one transaction,
 * and every promise settles only after the COMMIT. One failing write leaves the others: a single statement
 * fails alone (SQLite undoes just that statement), a write of several statements runs in a savepoint. A caller that answers after awaiting its write (POST /run's 200) therefore answers only for a
 * committed change, as before, while a burst of N writes costs one commit instead of N: in WAL mode each
 * commit appends every page it touched (the row and each index) to the log.
 */
export class GroupCommit {
  private pending: Pending[] = []
  private readonly savepoint: (fn: () => unknown) => unknown
  private readonly batch: (writes: Pending[]) => Outcome[]

  /** `onRollback` runs when a whole batch was rolled back (a failed COMMIT): memory that followed it must be rebuilt. */
  constructor(
    private readonly db: Database.Database,
    private readonly onRollback: () => void,
  ) {
    this.savepoint = db.transaction((fn: () => unknown) => fn())
    this.batch = db.transaction((writes: Pending[]) =>
      writes.map((w): Outcome => {
        try {
          return { ok: true, value: w.atomic ? this.savepoint(w.run) : w.run() }
        } catch (error) {
          // An error that ended the transaction itself (I/O, disk full): none of the batch stands.
          if (!this.db.inTransaction) throw error
          return { ok: false, error }
        }
      }),
    )
  }

  /**
   * Queues `run` for the next commit; resolves with its result once committed. `run` is synchronous: one
   * statement, or (`atomic`) several that must stand or fall together.
   */
  write<T>(run: () => T, atomic = false): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      // setImmediate, not a microtask: requests parsed in the same turn of the event loop share the commit.
      if (this.pending.length === 0) setImmediate(this.flush)
      this.pending.push({ run, atomic, resolve: resolve as (v: unknown) => void, reject })
    })
  }

  /** True when no write waits for its commit. */
  get idle(): boolean {
    return this.pending.length === 0
  }

  /** Commits what is pending now (also called before the database closes). */
  readonly flush = (): void => {
    const writes = this.pending
    if (writes.length === 0) return
    // Inside someone's open transaction these writes would commit (or roll back) with it: wait for its end.
    if (this.db.inTransaction) {
      setImmediate(this.flush)
      return
    }
    this.pending = []
    let outcomes: Outcome[]
    try {
      outcomes = this.batch(writes)
    } catch (error) {
      this.onRollback()
      for (const w of writes) w.reject(error)
      return
    }
    for (let i = 0; i < writes.length; i++) {
      const o = outcomes[i]
      if (o.ok) writes[i].resolve(o.value)
      else writes[i].reject(o.error)
    }
  }
}
