/** The histogram granularities of `/v2/billing/*`. */
export type BucketSize = 'hour' | 'day' | 'week' | 'month' | 'year'

export const BUCKET_SIZES: readonly BucketSize[] = ['hour', 'day', 'week', 'month', 'year']

const HOUR = 3_600_000
const DAY = 24 * HOUR

/**
 * Start (UTC) of the bucket holding `t`. Weeks start on Monday 00:00 UTC (ISO 8601), so every week, month and
 * year is a whole number of UTC days, and every year of months: the roll-ups (see rollup.ts) answer all of them.
 */
export function bucketStart(t: number, size: BucketSize): number {
  switch (size) {
    case 'hour':
      return t - mod(t, HOUR)
    case 'day':
      return t - mod(t, DAY)
    case 'week': {
      const day = t - mod(t, DAY)
      // 1970-01-01 was a Thursday: day index 0 is Thursday, so Monday is 3 days before a multiple of 7.
      const weekday = mod(Math.floor(day / DAY) + 3, 7)
      return day - weekday * DAY
    }
    case 'month': {
      const d = new Date(t)
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
    }
    case 'year':
      return Date.UTC(new Date(t).getUTCFullYear(), 0, 1)
  }
}

/** Start of the bucket after the one starting at `start` (which must be a bucket start). */
export function nextBucket(start: number, size: BucketSize): number {
  switch (size) {
    case 'hour':
      return start + HOUR
    case 'day':
      return start + DAY
    case 'week':
      return start + 7 * DAY
    case 'month': {
      const d = new Date(start)
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)
    }
    case 'year':
      return Date.UTC(new Date(start).getUTCFullYear() + 1, 0, 1)
  }
}

/** Start of the bucket `n` buckets before the one starting at `start`. */
export function bucketsBefore(start: number, size: BucketSize, n: number): number {
  switch (size) {
    case 'hour':
      return start - n * HOUR
    case 'day':
      return start - n * DAY
    case 'week':
      return start - n * 7 * DAY
    case 'month': {
      const d = new Date(start)
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - n, 1)
    }
    case 'year':
      return Date.UTC(new Date(start).getUTCFullYear() - n, 0, 1)
  }
}

/** End of the bucket holding `t`, for an exclusive end: a time already on a bound stays where it is. */
export function bucketEndAtOrAfter(t: number, size: BucketSize): number {
  const s = bucketStart(t, size)
  return s === t ? t : nextBucket(s, size)
}

/** One piece of a span: the part of [from, to) inside the bucket starting at `bucket`. */
export interface Piece {
  bucket: number
  from: number
  to: number
}

/** Splits [from, to) at the bounds of `size` buckets; empty when the span is empty. */
export function splitSpan(from: number, to: number, size: BucketSize): Piece[] {
  const out: Piece[] = []
  let bucket = bucketStart(from, size)
  let at = from
  while (at < to) {
    const next = nextBucket(bucket, size)
    const end = Math.min(next, to)
    out.push({ bucket, from: at, to: end })
    at = end
    bucket = next
  }
  return out
}

/** How many `size` buckets [from, to) spans, both being bucket bounds; stops counting past `limit`. */
export function countBuckets(from: number, to: number, size: BucketSize, limit: number): number {
  if (size === 'hour') return Math.ceil((to - from) / HOUR)
  if (size === 'day') return Math.ceil((to - from) / DAY)
  if (size === 'week') return Math.ceil((to - from) / (7 * DAY))
  let n = 0
  for (let b = from; b < to && n <= limit; b = nextBucket(b, size)) n++
  return n
}

function mod(a: number, m: number): number {
  return ((a % m) + m) % m
}
