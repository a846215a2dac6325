import { windowOf, type CounterStore } from './CounterStore.js'

/** Counters in this process's memory: the default for a single control plane. */
export class MemoryCounterStore implements CounterStore {
  // key -> windowMs -> the current window. One lookup per key, not a `key\0windowMs` string built per
  // window and hit: the quota check hits three windows of one key on every management request.
  private readonly counts = new Map<string, Map<number, { start: number; count: number }>>()
  private readonly leases = new Map<string, Map<string, number>>() // key -> leaseId -> expiresAt
  private sweeps = 0
  private leaseSeq = 0

  async hit(windows: ReadonlyArray<{ key: string; windowMs: number }>, now: number, by = 1) {
    if (++this.sweeps % 10_000 === 0) this.sweep(now)
    const out = new Array<{ count: number; resetMs: number }>(windows.length)
    let key: string | undefined
    let byWindow: Map<number, { start: number; count: number }> | undefined
    for (let i = 0; i < windows.length; i++) {
      const w = windows[i]
      if (w.key !== key || !byWindow) {
        key = w.key
        byWindow = this.counts.get(key)
        if (!byWindow) this.counts.set(key, (byWindow = new Map()))
      }
      const { start, resetMs } = windowOf(now, w.windowMs)
      let c = byWindow.get(w.windowMs)
      if (!c) byWindow.set(w.windowMs, (c = { start, count: 0 }))
      else if (c.start !== start) {
        c.start = start
        c.count = 0
      }
      c.count += by
      out[i] = { count: c.count, resetMs }
    }
    return out
  }

  async acquire(key: string, limit: number, ttlMs: number, now: number) {
    let held = this.leases.get(key)
    if (!held) this.leases.set(key, (held = new Map()))
    // Expired leases only matter at the limit: scanning them on every call cost O(concurrency) per request.
    if (held.size >= limit) for (const [id, exp] of held) if (exp <= now) held.delete(id)
    if (held.size >= limit) return null
    // Unique within this process, which is all a lease in memory needs (and cheaper than a UUID).
    const id = String(++this.leaseSeq)
    held.set(id, now + ttlMs)
    return id
  }

  async release(key: string, leaseId: string) {
    const held = this.leases.get(key)
    held?.delete(leaseId)
    if (held?.size === 0) this.leases.delete(key)
  }

  async close() {}

  /** Drops counters of windows long past so memory stays bounded by active callers. */
  private sweep(now: number) {
    for (const [key, byWindow] of this.counts) {
      for (const [windowMs, c] of byWindow) if (c.start + windowMs < now) byWindow.delete(windowMs)
      if (byWindow.size === 0) this.counts.delete(key)
    }
  }
}
