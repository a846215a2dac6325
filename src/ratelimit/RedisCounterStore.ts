import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { windowOf, type CounterStore } from './CounterStore.js'

// One round trip for all windows of a request: INCRBY each window's key, set its expiry on first use (the
// count is then the increment itself). ARGV[1] is the increment, ARGV[i + 1] the expiry of KEYS[i].
const HIT = `
local out = {}
local by = tonumber(ARGV[1])
for i = 1, #KEYS do
  local n = redis.call('INCRBY', KEYS[i], by)
  if n == by then redis.call('PEXPIRE', KEYS[i], ARGV[i + 1]) end
  out[i] = n
end
return out`

// Leases are members of a sorted set scored by expiry; expired ones are dropped before counting.
const ACQUIRE = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1`

/** Counters in Redis, shared by every control-plane replica pointing at the same server. */
export class RedisCounterStore implements CounterStore {
  private readonly redis: Redis

  /** @param url e.g. `redis://127.0.0.1:6379/0`; `prefix` separates deployments sharing one Redis. */
  constructor(
    url: string,
    private readonly prefix = 'hangar:rl:',
  ) {
    this.redis = new Redis(url, { maxRetriesPerRequest: 2, enableAutoPipelining: true, lazyConnect: false })
  }

  async hit(windows: ReadonlyArray<{ key: string; windowMs: number }>, now: number, by = 1) {
    const w = windows.map(({ key, windowMs }) => ({
      ...windowOf(now, windowMs),
      key: `${this.prefix}${key}:${windowMs}:${Math.floor(now / windowMs)}`,
      windowMs,
    }))
    const counts = (await this.redis.eval(
      HIT,
      w.length,
      ...w.map((x) => x.key),
      String(by),
      ...w.map((x) => String(x.resetMs + 1000)),
    )) as number[]
    return w.map((x, i) => ({ count: Number(counts[i]), resetMs: x.resetMs }))
  }

  async acquire(key: string, limit: number, ttlMs: number, now: number) {
    const id = randomUUID()
    const ok = await this.redis.eval(
      ACQUIRE,
      1,
      `${this.prefix}c:${key}`,
      String(now),
      String(limit),
      String(now + ttlMs),
      id,
      String(ttlMs),
    )
    return ok === 1 ? id : null
  }

  async release(key: string, leaseId: string) {
    await this.redis.zrem(`${this.prefix}c:${key}`, leaseId)
  }

  async close() {
    // A connection that cannot say QUIT (Redis down) is simply dropped: there is nothing to flush.
    await this.redis.quit().catch(() => this.redis.disconnect())
  }
}
