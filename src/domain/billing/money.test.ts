import { describe, expect, it } from 'vitest'
import { accrued, HOUR_MS, microsToUsd, MONTH_MS, usdToMicros } from './money.js'

describe('money', () => {
  it.each([
    [0.69, 690_000],
    [0.00031 * 3600, 1_116_000],
    [0.1, 100_000],
    [5.99, 5_990_000],
    [0, 0],
  ])('reads %s USD as %i micro-dollars', (usd, micros) => {
    expect(usdToMicros(usd)).toBe(micros)
  })

  it('writes micro-dollars as the shortest USD number', () => {
    expect(microsToUsd(191_666)).toBe(0.191666)
    expect(microsToUsd(1)).toBe(0.000001)
  })

  it.each([
    // price per period, period, elapsed, expected (floor of price x elapsed / period)
    [690_000, HOUR_MS, HOUR_MS, 690_000],
    [690_000, HOUR_MS, 1_000, 191], // 191.66...
    [690_000, HOUR_MS, 3 * HOUR_MS + 1_000, 3 * 690_000 + 191],
    [100_000 * 50, MONTH_MS, MONTH_MS, 5_000_000],
    [100_000 * 50, MONTH_MS, HOUR_MS, 6_849], // 5,000,000 / 730 = 6849.3
    [690_000, HOUR_MS, 0, 0],
    [690_000, HOUR_MS, -5, 0],
  ])('accrues %i per %i ms over %i ms as %i', (price, period, elapsed, expected) => {
    expect(accrued(price, period, elapsed)).toBe(expected)
  })

  it('stays exact where a float product would not (a 250-pod cluster of 8 B200s for ten years)', () => {
    const price = 250 * 8 * 5_990_000
    const elapsed = 10 * 365 * 24 * HOUR_MS + 1_234
    const exact = (BigInt(price) * BigInt(elapsed)) / BigInt(HOUR_MS)
    expect(BigInt(accrued(price, HOUR_MS, elapsed))).toBe(exact)
    // A remainder just below a whole micro-dollar is never rounded up.
    expect(accrued(3_600_000 - 1, HOUR_MS, HOUR_MS - 1)).toBe(3_600_000 - 2)
  })
})
