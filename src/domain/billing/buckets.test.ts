import { describe, expect, it } from 'vitest'
import { bucketEndAtOrAfter, bucketsBefore, bucketStart, nextBucket, splitSpan, type BucketSize } from './buckets.js'

const t = (s: string) => Date.parse(s)
const iso = (ms: number) => new Date(ms).toISOString()

describe('billing buckets (UTC)', () => {
  it.each<[BucketSize, string, string, string]>([
    ['hour', '2026-03-14T15:09:26.535Z', '2026-03-14T15:00:00.000Z', '2026-03-14T16:00:00.000Z'],
    ['day', '2026-03-14T15:09:26.535Z', '2026-03-14T00:00:00.000Z', '2026-03-15T00:00:00.000Z'],
    // Weeks start on Monday (ISO 8601): 2026-03-14 is a Saturday, 2026-03-09 the Monday before.
    ['week', '2026-03-14T15:09:26.535Z', '2026-03-09T00:00:00.000Z', '2026-03-16T00:00:00.000Z'],
    ['week', '2026-03-09T00:00:00.000Z', '2026-03-09T00:00:00.000Z', '2026-03-16T00:00:00.000Z'],
    ['week', '2026-03-15T23:59:59.999Z', '2026-03-09T00:00:00.000Z', '2026-03-16T00:00:00.000Z'],
    ['week', '1970-01-01T00:00:00.000Z', '1969-12-29T00:00:00.000Z', '1970-01-05T00:00:00.000Z'],
    ['month', '2024-02-29T23:00:00.000Z', '2024-02-01T00:00:00.000Z', '2024-03-01T00:00:00.000Z'],
    ['month', '2026-12-31T23:59:59.999Z', '2026-12-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z'],
    ['year', '2024-07-01T00:00:00.000Z', '2024-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z'],
  ])('%s bucket of %s is [%s, %s)', (size, at, start, next) => {
    expect(iso(bucketStart(t(at), size))).toBe(start)
    expect(iso(nextBucket(t(start), size))).toBe(next)
  })

  it('counts buckets back across month and year ends', () => {
    expect(iso(bucketsBefore(t('2026-01-01T00:00:00Z'), 'month', 2))).toBe('2025-11-01T00:00:00.000Z')
    expect(iso(bucketsBefore(t('2026-03-09T00:00:00Z'), 'week', 1))).toBe('2026-03-02T00:00:00.000Z')
    expect(iso(bucketsBefore(t('2026-01-01T00:00:00Z'), 'year', 3))).toBe('2023-01-01T00:00:00.000Z')
  })

  it('keeps an exclusive end on a bound, and moves one inside a bucket to its end', () => {
    expect(iso(bucketEndAtOrAfter(t('2026-03-15T00:00:00Z'), 'day'))).toBe('2026-03-15T00:00:00.000Z')
    expect(iso(bucketEndAtOrAfter(t('2026-03-15T00:00:00.001Z'), 'day'))).toBe('2026-03-16T00:00:00.000Z')
  })

  it.each<[BucketSize, string, string, string[]]>([
    [
      'hour',
      '2026-03-14T15:59:00Z',
      '2026-03-14T16:01:00Z',
      ['2026-03-14T15:59:00.000Z..2026-03-14T16:00:00.000Z', '2026-03-14T16:00:00.000Z..2026-03-14T16:01:00.000Z'],
    ],
    [
      'day',
      '2026-03-14T23:30:00Z',
      '2026-03-15T00:30:00Z',
      ['2026-03-14T23:30:00.000Z..2026-03-15T00:00:00.000Z', '2026-03-15T00:00:00.000Z..2026-03-15T00:30:00.000Z'],
    ],
    [
      'week',
      '2026-03-15T23:00:00Z',
      '2026-03-16T01:00:00Z',
      ['2026-03-15T23:00:00.000Z..2026-03-16T00:00:00.000Z', '2026-03-16T00:00:00.000Z..2026-03-16T01:00:00.000Z'],
    ],
    [
      'month',
      '2024-02-29T23:00:00Z',
      '2024-03-01T01:00:00Z',
      ['2024-02-29T23:00:00.000Z..2024-03-01T00:00:00.000Z', '2024-03-01T00:00:00.000Z..2024-03-01T01:00:00.000Z'],
    ],
    [
      'year',
      '2025-12-31T23:00:00Z',
      '2026-01-01T01:00:00Z',
      ['2025-12-31T23:00:00.000Z..2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z..2026-01-01T01:00:00.000Z'],
    ],
    ['day', '2026-03-14T10:00:00Z', '2026-03-14T10:00:00Z', []],
  ])('splits a span across a %s bound', (size, from, to, pieces) => {
    expect(splitSpan(t(from), t(to), size).map((p) => `${iso(p.from)}..${iso(p.to)}`)).toEqual(pieces)
  })
})
