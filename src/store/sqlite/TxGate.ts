/**
 * SQLite has one connection, so a transaction opened by `Store.transaction` would also contain whatever
 * else ran on it while `fn` awaits. The gate keeps transactions one at a time and makes every call from
 * outside the open transaction wait for its end, which is what a pool of connections gives PostgreSQL.
 */
export class TxGate {
  private open: Promise<void> | null = null

  /** True while a transaction is open. */
  get busy(): boolean {
    return this.open !== null
  }

  /** Resolves once no transaction is open. */
  async wait(): Promise<void> {
    while (this.open) await this.open
  }

  /** Runs `fn` as the only open transaction. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    // Checked again after every wake-up, in the same tick as taking the gate: several waiters wake together.
    while (this.open) await this.open
    let release!: () => void
    this.open = new Promise<void>((r) => (release = r))
    try {
      return await fn()
    } finally {
      this.open = null
      release()
    }
  }

  /** `target` with each method waiting for the gate first; for calls made outside the transaction. */
  guard<T extends object>(target: T): T {
    const gate = this
    const wrapped = new Map<PropertyKey, unknown>()
    return new Proxy(target, {
      get(t, p) {
        const v: unknown = Reflect.get(t, p, t)
        if (typeof v !== 'function') return v
        let w = wrapped.get(p)
        if (!w) {
          w = async (...args: unknown[]) => {
            if (gate.busy) await gate.wait()
            return Reflect.apply(v, t, args)
          }
          wrapped.set(p, w)
        }
        return w
      },
    })
  }
}
