import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import type { CounterStore } from '../../src/ratelimit/CounterStore.js'

/** The behaviour every CounterStore adapter must have; run once per adapter. */
export function counterStoreContract(name: string, make: () => CounterStore) {
  describe(`CounterStore contract: ${name}`, () => {
    const store = make()
    afterAll(() => store.close())
    const key = () => `t-${randomUUID()}`
    const T = 1_800_000_000_000 // a fixed instant, aligned to a minute

    it('counts hits per window and reports time to the window end', async () => {
      const k = key()
      const w = [
        { key: k, windowMs: 60_000 },
        { key: k, windowMs: 3_600_000 },
      ]
      expect(await store.hit(w, T + 1_000)).toEqual([
        { count: 1, resetMs: 59_000 },
        { count: 1, resetMs: 3_600_000 - ((T + 1_000) % 3_600_000) },
      ])
      const second = await store.hit(w, T + 2_000)
      expect(second.map((x) => x.count)).toEqual([2, 2])
      expect(second[0].resetMs).toBe(58_000)
    })

    it('starts a fresh count when the window rolls over', async () => {
      const k = key()
      await store.hit([{ key: k, windowMs: 10_000 }], T + 9_999)
      expect((await store.hit([{ key: k, windowMs: 10_000 }], T + 10_000))[0]).toEqual({ count: 1, resetMs: 10_000 })
    })

    it('counts by more than one, and gives hits back with a negative count', async () => {
      const k = key()
      const w = [{ key: k, windowMs: 60_000 }]
      expect((await store.hit(w, T, 3))[0].count).toBe(3)
      expect((await store.hit(w, T, -1))[0].count).toBe(2)
      expect((await store.hit(w, T))[0].count).toBe(3)
      // A give-back into a window not counted yet expires with that window, like any count.
      const fresh = [{ key: key(), windowMs: 10_000 }]
      expect((await store.hit(fresh, T, -1))[0].count).toBe(-1)
      expect((await store.hit(fresh, T + 10_000))[0].count).toBe(1)
    })

    it('keeps keys apart', async () => {
      const [a, b] = [key(), key()]
      await store.hit([{ key: a, windowMs: 60_000 }], T)
      expect((await store.hit([{ key: b, windowMs: 60_000 }], T))[0].count).toBe(1)
    })

    it('counts concurrent hits exactly', async () => {
      const k = key()
      const results = await Promise.all(Array.from({ length: 50 }, () => store.hit([{ key: k, windowMs: 60_000 }], T)))
      expect(results.map((r) => r[0].count).sort((x, y) => x - y)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1))
    })

    it('grants at most `limit` concurrent leases and frees a slot on release', async () => {
      const k = key()
      const a = await store.acquire(k, 2, 60_000, T)
      const b = await store.acquire(k, 2, 60_000, T)
      expect(a).toBeTruthy()
      expect(b).toBeTruthy()
      expect(await store.acquire(k, 2, 60_000, T)).toBeNull()
      await store.release(k, a!)
      await store.release(k, a!) // twice is harmless
      expect(await store.acquire(k, 2, 60_000, T)).toBeTruthy()
      expect(await store.acquire(k, 2, 60_000, T)).toBeNull()
    })

    it('frees a lease that was never released once its ttl passes', async () => {
      const k = key()
      expect(await store.acquire(k, 1, 1_000, T)).toBeTruthy()
      expect(await store.acquire(k, 1, 1_000, T + 999)).toBeNull()
      expect(await store.acquire(k, 1, 1_000, T + 1_001)).toBeTruthy()
    })

    it('never over-grants under a race', async () => {
      const k = key()
      const got = await Promise.all(Array.from({ length: 30 }, () => store.acquire(k, 7, 60_000, T)))
      expect(got.filter(Boolean)).toHaveLength(7)
    })
  })
}
