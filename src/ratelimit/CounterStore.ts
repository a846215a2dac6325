/**
 * The port behind every rate limit: fixed-window counters and concurrency leases. The in-memory adapter
 * serves one process; the Redis adapter lets several control-plane replicas share one budget. Both pass
 * `counterStoreContract`.
 */
export interface CounterStore {
  /**
   * Counts one hit in each window and returns, per window, the count including this hit and the
   * milliseconds until that window resets. Windows are aligned to the epoch, so every replica agrees.
   * `by` (default 1) counts that many instead; -1 gives back a hit counted before (a sign-in attempt counted
   * as a failure up front, so that racing attempts cannot all pass, is given back when it succeeds).
   */
  hit(
    windows: ReadonlyArray<{ key: string; windowMs: number }>,
    now: number,
    by?: number,
  ): Promise<Array<{ count: number; resetMs: number }>>
  /**
   * Takes one of `limit` concurrent slots under `key`, or returns null when all are taken. A lease
   * that is never released (a crashed replica) frees itself after `ttlMs`.
   */
  acquire(key: string, limit: number, ttlMs: number, now: number): Promise<string | null>
  /** Gives a slot back; releasing twice or after expiry is harmless. */
  release(key: string, leaseId: string): Promise<void>
  close(): Promise<void>
}

/** The start of the fixed window containing `now` and the milliseconds left in it. */
export function windowOf(now: number, windowMs: number): { start: number; resetMs: number } {
  const start = Math.floor(now / windowMs) * windowMs
  return { start, resetMs: start + windowMs - now }
}
