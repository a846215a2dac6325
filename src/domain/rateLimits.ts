/** Per-user management quota windows, in the order the RateLimit headers list them. */
export const QUOTA_WINDOWS = [
  { name: 'minute', ms: 60_000 },
  { name: 'hour', ms: 3_600_000 },
  { name: 'day', ms: 86_400_000 },
] as const
export type QuotaWindow = (typeof QUOTA_WINDOWS)[number]['name']
export type Quotas = Record<QuotaWindow, number>

/** Job operations that are limited per endpoint, with the spec's base limits (rate per 10 s, concurrency). */
export const JOB_OPERATION_LIMITS = {
  runsync: { rate: 2000, concurrent: 400 },
  run: { rate: 1000, concurrent: 200 },
  status: { rate: 2000, concurrent: 400 },
  stream: { rate: 2000, concurrent: 400 },
  cancel: { rate: 100, concurrent: 20 },
  'purge-queue': { rate: 2, concurrent: null },
  openai: { rate: 2000, concurrent: 400 },
  requests: { rate: 10, concurrent: 2 },
} as const satisfies Record<string, { rate: number; concurrent: number | null }>
export type JobOperation = keyof typeof JOB_OPERATION_LIMITS

export const JOB_RATE_WINDOW_MS = 10_000

/**
 * The spec's dynamic rule: the effective limit is the higher of the base and running workers times a
 * per-worker allowance, so an endpoint scaled out is not throttled by a limit sized for one worker.
 */
export function effectiveJobLimit(
  op: JobOperation,
  runningWorkers: number,
  perWorker: { rate: number; concurrent: number },
): { rate: number; concurrent: number | null } {
  const base = JOB_OPERATION_LIMITS[op]
  return {
    rate: Math.max(base.rate, runningWorkers * perWorker.rate),
    concurrent: base.concurrent === null ? null : Math.max(base.concurrent, runningWorkers * perWorker.concurrent),
  }
}
