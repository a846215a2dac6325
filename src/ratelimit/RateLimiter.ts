import { serializeInteger, serializeItem, serializeList } from 'structured-headers'
import type { Clock } from '../domain/clock.js'
import { DomainError } from '../domain/errors.js'
import {
  effectiveJobLimit,
  JOB_RATE_WINDOW_MS,
  QUOTA_WINDOWS,
  type JobOperation,
  type Quotas,
} from '../domain/rateLimits.js'
import type { CounterStore } from './CounterStore.js'

export interface RateLimiterOptions {
  counters: CounterStore
  clock: Clock
  /** Requests per account per window on the management API. */
  quotas: Quotas
  /** Allowance per running worker for the dynamic job-operation limit (rate per 10 s, concurrent). */
  perWorker: { rate: number; concurrent: number }
  /** Running workers of an endpoint, for the dynamic limit. */
  runningWorkers: (endpointId: string) => number
}

/** Headers for an authenticated management response. */
export type QuotaHeaders = { ratelimit: string; 'ratelimit-policy': string }

/** The longest a job-operation slot may be held before it frees itself (a replica crashed mid-request). */
const SLOT_TTL_MS = 6 * 60_000

/** Management quotas per account and job-operation limits per endpoint, over a shared CounterStore. */
export class RateLimiter {
  private readonly policy: string
  /** Each quota window's name as a serialized Item (`"minute"`), the constant head of its RateLimit member. */
  private readonly memberHeads: string[]

  constructor(private readonly opts: RateLimiterOptions) {
    this.policy = serializeList(
      QUOTA_WINDOWS.map((w) => [
        w.name,
        new Map([
          ['q', opts.quotas[w.name]],
          ['w', w.ms / 1000],
        ]),
      ]),
    )
    // RateLimit is a List of `<window>;r=<remaining>;t=<seconds to reset>`. Serializing it whole took most of
    // a quota check (a Map per member, a key and ASCII check per parameter); only the two integers change
    // between requests, so the window names are serialized once and the integers by serializeInteger.
    // The result equals serializeList of the same members (test/rateLimiter.test.ts holds it to that).
    this.memberHeads = QUOTA_WINDOWS.map((w) => serializeItem(w.name, new Map()))
  }

  /**
   * Counts one request of `accountId` and returns the RateLimit headers, or throws 429 naming the
   * exhausted window, with Retry-After and the headers.
   */
  async quota(accountId: string): Promise<QuotaHeaders> {
    const now = this.opts.clock.now()
    const key = `q:${accountId}`
    const counts = await this.opts.counters.hit(
      QUOTA_WINDOWS.map((w) => ({ key, windowMs: w.ms })),
      now,
    )
    let ratelimit = ''
    for (let i = 0; i < QUOTA_WINDOWS.length; i++) {
      const remaining = Math.max(0, this.opts.quotas[QUOTA_WINDOWS[i].name] - counts[i].count)
      ratelimit += `${i ? ', ' : ''}${this.memberHeads[i]};r=${serializeInteger(remaining)};t=${serializeInteger(Math.ceil(counts[i].resetMs / 1000))}`
    }
    const headers: QuotaHeaders = { ratelimit, 'ratelimit-policy': this.policy }
    // The longest wait among exceeded windows is the one that matters.
    let worst = -1
    QUOTA_WINDOWS.forEach((w, i) => {
      if (counts[i].count > this.opts.quotas[w.name] && (worst < 0 || counts[i].resetMs > counts[worst].resetMs))
        worst = i
    })
    if (worst >= 0) {
      const w = QUOTA_WINDOWS[worst]
      const retry = Math.max(1, Math.ceil(counts[worst].resetMs / 1000))
      throw new DomainError(
        'too_many_requests',
        `rate limit exceeded for the ${w.name} window: ${this.opts.quotas[w.name]} requests per ${w.ms / 1000} s; retry in ${retry} s`,
        undefined,
        {
          ...headers,
          'retry-after': String(retry),
        },
      )
    }
    return headers
  }

  /**
   * Admits one job operation on an endpoint: counts it against the 10-second rate and takes a
   * concurrency slot. Returns the release function (call it exactly when the request ends, on every
   * path); throws 429 with Retry-After when over either limit.
   */
  async enterJobOperation(endpointId: string, op: JobOperation): Promise<() => void> {
    const now = this.opts.clock.now()
    const limit = effectiveJobLimit(op, this.opts.runningWorkers(endpointId), this.opts.perWorker)
    const [{ count, resetMs }] = await this.opts.counters.hit(
      [{ key: `j:${endpointId}:${op}`, windowMs: JOB_RATE_WINDOW_MS }],
      now,
    )
    if (count > limit.rate) {
      const retry = Math.max(1, Math.ceil(resetMs / 1000))
      throw new DomainError(
        'too_many_requests',
        `rate limit exceeded for ${op} on endpoint ${endpointId}: ${limit.rate} requests per 10 s; retry in ${retry} s`,
        undefined,
        { 'retry-after': String(retry) },
      )
    }
    if (limit.concurrent === null) return () => {}
    const key = `jc:${endpointId}:${op}`
    const lease = await this.opts.counters.acquire(key, limit.concurrent, SLOT_TTL_MS, now)
    if (!lease) {
      throw new DomainError(
        'too_many_requests',
        `too many concurrent ${op} requests on endpoint ${endpointId}: at most ${limit.concurrent} at once; retry shortly`,
        undefined,
        { 'retry-after': '1' },
      )
    }
    let released = false
    return () => {
      if (released) return
      released = true
      // A release that fails (Redis unreachable) leaves the slot to expire with its lease (SLOT_TTL_MS); the
      // response it guarded is sent already, and a store that keeps failing fails the next request's acquire.
      void this.opts.counters.release(key, lease).catch(() => {})
    }
  }
}
