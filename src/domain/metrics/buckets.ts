/**
 * Endpoint metrics in compact time buckets: plain counters, histograms over fixed bins (so buckets of
 * several replicas, or of several minutes, merge by adding) and gauge samples (sum and count, so a merged
 * bucket averages). Pure data and arithmetic; the recorder and the store build on it.
 */

/** Upper bounds (ms) of the histogram bins; the last bin holds everything above the last bound. */
export const BIN_BOUNDS_MS = [
  5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 120_000, 300_000, 600_000, 1_800_000,
  3_600_000,
] as const

export const COUNTERS = [
  'completed',
  'failed',
  'cancelled',
  'timedOut',
  'coldStarts',
  'requests',
  'status2xx',
  'status3xx',
  'status4xx',
  'status5xx',
] as const
export type CounterName = (typeof COUNTERS)[number]
export const HISTOGRAMS = ['executionMs', 'delayMs', 'coldStartMs', 'latencyMs'] as const
export type HistogramName = (typeof HISTOGRAMS)[number]
export const GAUGES = ['workersRunning', 'workersIdle', 'workersThrottled', 'queueDepth'] as const
export type GaugeName = (typeof GAUGES)[number]

/** What one bucket holds; absent entries are zero (rows stay small for quiet endpoints). */
export interface BucketData {
  c?: Partial<Record<CounterName, number>>
  /** Counts per bin, `BIN_BOUNDS_MS.length + 1` long. */
  h?: Partial<Record<HistogramName, number[]>>
  /** [sum of samples, number of samples]. */
  g?: Partial<Record<GaugeName, [number, number]>>
}

/** The two resolutions kept: minutes (for the last hour and day) and hours (for weeks). */
export const RESOLUTIONS = { minute: 60_000, hour: 3_600_000 } as const
export type Resolution = keyof typeof RESOLUTIONS

export function binOf(ms: number): number {
  let i = 0
  while (i < BIN_BOUNDS_MS.length && ms > BIN_BOUNDS_MS[i]) i++
  return i
}

export function addCount(b: BucketData, name: CounterName, n = 1): void {
  const c = (b.c ??= {})
  c[name] = (c[name] ?? 0) + n
}

export function observe(b: BucketData, name: HistogramName, ms: number): void {
  const h = (b.h ??= {})
  const bins = (h[name] ??= new Array<number>(BIN_BOUNDS_MS.length + 1).fill(0))
  bins[binOf(Math.max(0, ms))]++
}

export function sample(b: BucketData, name: GaugeName, value: number): void {
  const g = (b.g ??= {})
  const s = (g[name] ??= [0, 0])
  s[0] += value
  s[1]++
}

/** Adds `from` into `into` (counters and bins add; gauge sums and sample counts add). */
export function mergeInto(into: BucketData, from: BucketData): BucketData {
  for (const [k, v] of Object.entries(from.c ?? {})) addCount(into, k as CounterName, v)
  for (const [k, bins] of Object.entries(from.h ?? {})) {
    const h = (into.h ??= {})
    const to = (h[k as HistogramName] ??= new Array<number>(BIN_BOUNDS_MS.length + 1).fill(0))
    bins.forEach((n, i) => (to[i] = (to[i] ?? 0) + n))
  }
  for (const [k, [sum, n]] of Object.entries(from.g ?? {})) {
    const g = (into.g ??= {})
    const to = (g[k as GaugeName] ??= [0, 0])
    to[0] += sum
    to[1] += n
  }
  return into
}

/**
 * The `q` quantile (0..1) of a binned histogram, interpolated linearly inside its bin (the open last bin
 * answers its lower bound); null when empty.
 */
export function quantile(bins: readonly number[] | undefined, q: number): number | null {
  if (!bins) return null
  const total = bins.reduce((a, n) => a + n, 0)
  if (total === 0) return null
  const rank = q * total
  let seen = 0
  for (let i = 0; i < bins.length; i++) {
    if (bins[i] === 0) continue
    if (seen + bins[i] >= rank) {
      const lo = i === 0 ? 0 : BIN_BOUNDS_MS[i - 1]
      if (i >= BIN_BOUNDS_MS.length) return lo
      const hi = BIN_BOUNDS_MS[i]
      return Math.round(lo + ((rank - seen) / bins[i]) * (hi - lo))
    }
    seen += bins[i]
  }
  return BIN_BOUNDS_MS[BIN_BOUNDS_MS.length - 1]
}

/** The average of a gauge's samples, or null when none was taken. */
export function average(g: [number, number] | undefined): number | null {
  return g && g[1] > 0 ? g[0] / g[1] : null
}

/** How each window reads: which resolution, the interval of its points, and how far back. */
export const WINDOWS = {
  hour: { resolution: 'minute', intervalMs: 60_000, spanMs: 3_600_000 },
  day: { resolution: 'minute', intervalMs: 900_000, spanMs: 86_400_000 },
  week: { resolution: 'hour', intervalMs: 3_600_000, spanMs: 7 * 86_400_000 },
} as const satisfies Record<string, { resolution: Resolution; intervalMs: number; spanMs: number }>
export type MetricsWindow = keyof typeof WINDOWS
