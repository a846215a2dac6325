/**
 * Money is integer micro-dollars (1 USD = 1,000,000 µ$) everywhere below the API, so sums never drift.
 * USD numbers appear only at the edges: prices read from the catalog/config, amounts written in responses.
 */
export type Micros = number

export const MICROS_PER_USD = 1_000_000
export const HOUR_MS = 3_600_000
/** A billing month for per-GB-month prices: 730 hours (365 days x 24 h / 12), whatever the calendar month. */
export const MONTH_MS = 730 * HOUR_MS

/** A USD price or amount as whole micro-dollars (prices carry at most 6 decimals; the rest is rounded off). */
export function usdToMicros(usd: number): Micros {
  if (!Number.isFinite(usd) || usd < 0) throw new RangeError(`not a price: ${usd}`)
  return Math.round(usd * MICROS_PER_USD)
}

/** Micro-dollars as the USD number a response carries: an exact multiple of 0.000001 in shortest form. */
export function microsToUsd(micros: Micros): number {
  return micros / MICROS_PER_USD
}

/**
 * What something priced `priceMicros` per `periodMs` costs after running `elapsedMs`, rounded down to the
 * micro-dollar. This is the one rounding rule of billing: a piece [a, b) of an interval that began at `s`
 * costs `accrued(b - s) - accrued(a - s)`, so the pieces of any split (hours, days, months) add up to the
 * interval's cost exactly, and every total equals the sum of its parts.
 *
 * Computed exactly for any size: the whole periods and the remainder are multiplied apart, falling back to
 * BigInt only when a product would leave the safe integer range.
 */
export function accrued(priceMicros: Micros, periodMs: number, elapsedMs: number): Micros {
  if (elapsedMs <= 0 || priceMicros === 0) return 0
  const whole = Math.floor(elapsedMs / periodMs)
  const rest = elapsedMs - whole * periodMs
  const a = priceMicros * whole
  const b = priceMicros * rest
  if (Number.isSafeInteger(a) && Number.isSafeInteger(b)) return a + (b - (b % periodMs)) / periodMs
  return Number((BigInt(priceMicros) * BigInt(elapsedMs)) / BigInt(periodMs))
}
