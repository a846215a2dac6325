import { windowOf, type CounterStore } from './CounterStore.js'

/** Counters in this process's memory: the default for a single control plane. */
export class MemoryCounterStore implements CounterStore {
  private readonly counts = new Map<string, { start: number; count: number }>()
  private readonly leases = new Map<string, Map<string, number>>() // key -> leaseId -> expiresAt
  private sweeps = 0
  private leaseSeq = 0

  async hit(windows: ReadonlyArray<{ key: string; windowMs: number }>, now: number) {
    if (++this.sweeps % 10_000 === 0) this.sweep(now)
    return windows.map(({ key, windowMs }) => {
      const { start, resetMs } = windowOf(now, windowMs)
      const k = `${key}\0${windowMs}`
      let c = this.counts.get(k)
      if (!c || c.start !== start) {
        c = { start, count: 0 }
        this.counts.set(k, c)
      }
      c.count++
      return { count: c.count, resetMs }
    })
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
    for (const [k, c] of this.counts) {
      const windowMs = Number(k.slice(k.lastIndexOf('\0') + 1))
      if (c.start + windowMs < now) this.counts.delete(k)
    }
  }
}
