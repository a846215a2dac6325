import { serializeList } from 'structured-headers'
import { describe, expect, it } from 'vitest'
import { QUOTA_WINDOWS } from '../src/domain/rateLimits.js'
import { MemoryCounterStore } from '../src/ratelimit/MemoryCounterStore.js'
import { RateLimiter } from '../src/ratelimit/RateLimiter.js'
import { ManualClock } from './helpers/clock.js'

describe('RateLimiter.quota headers', () => {
  it('equal what structured-headers serializes for the same members, across windows rolling over', async () => {
    const clock = new ManualClock()
    clock.set(Math.floor(Date.now() / 86_400_000) * 86_400_000 + 59_500)
    const quotas = { minute: 3, hour: 1000, day: 999_999 }
    const limiter = new RateLimiter({
      counters: new MemoryCounterStore(),
      clock,
      quotas,
      perWorker: { rate: 1, concurrent: 1 },
      runningWorkers: () => 0,
    })
    // The count and start of each window, as the limiter should see them: the minute rolls over after the first call.
    const counts = { minute: 0, hour: 0, day: 0 }
    const starts = { minute: -1, hour: -1, day: -1 }
    for (let i = 0; i < 8; i++) {
      const now = clock.now()
      for (const w of QUOTA_WINDOWS) {
        const start = Math.floor(now / w.ms)
        counts[w.name] = starts[w.name] === start ? counts[w.name] + 1 : 1
        starts[w.name] = start
      }
      const expected = serializeList(
        QUOTA_WINDOWS.map((w) => {
          const resetMs = (Math.floor(now / w.ms) + 1) * w.ms - now
          return [
            w.name,
            new Map([
              ['r', Math.max(0, quotas[w.name] - counts[w.name])],
              ['t', Math.ceil(resetMs / 1000)],
            ]),
          ]
        }),
      )
      // Past the minute's 3 the call throws 429, carrying the same headers.
      const headers = await limiter.quota('acc').catch((err: { headers?: Record<string, string> }) => err.headers!)
      expect(headers.ratelimit).toBe(expected)
      expect(headers['ratelimit-policy']).toBe('"minute";q=3;w=60, "hour";q=1000;w=3600, "day";q=999999;w=86400')
      clock.advance(700)
    }
  })
})
