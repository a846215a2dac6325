import { describe, expect, it } from 'vitest'
import {
  addCount,
  average,
  BIN_BOUNDS_MS,
  binOf,
  mergeInto,
  observe,
  quantile,
  sample,
  type BucketData,
} from './buckets.js'

describe('metric buckets', () => {
  it('bins by upper bound, the last bin open', () => {
    expect([binOf(0), binOf(5), binOf(6), binOf(3_600_000), binOf(3_600_001)]).toEqual([
      0,
      0,
      1,
      BIN_BOUNDS_MS.length - 1,
      BIN_BOUNDS_MS.length,
    ])
  })

  it.each([
    ['nothing observed', [], 0.5, null],
    ['one value, any quantile inside its bin', [40], 0.99, 50],
    ['the median of 9 fast and 1 slow', [...Array(9).fill(40), 4_000], 0.5, 39],
    ['p99 of the same lands in the slow bin', [...Array(9).fill(40), 4_000], 0.99, 4_750],
    ['above the last bound answers the bound', [7_200_000], 0.5, 3_600_000],
  ])('%s', (_what, values, q, expected) => {
    const b: BucketData = {}
    for (const v of values as number[]) observe(b, 'executionMs', v)
    expect(quantile(b.h?.executionMs, q as number)).toBe(expected)
  })

  it('merges counters, bins and gauge samples by addition', () => {
    const a: BucketData = {}
    const b: BucketData = {}
    addCount(a, 'completed', 2)
    addCount(b, 'completed')
    addCount(b, 'failed')
    observe(a, 'delayMs', 3)
    observe(b, 'delayMs', 3)
    sample(a, 'queueDepth', 4)
    sample(b, 'queueDepth', 0)
    const m = mergeInto(mergeInto({}, a), b)
    expect(m.c).toEqual({ completed: 3, failed: 1 })
    expect(m.h?.delayMs?.[0]).toBe(2)
    expect(average(m.g?.queueDepth)).toBe(2)
    expect(average(undefined)).toBeNull()
  })
})
