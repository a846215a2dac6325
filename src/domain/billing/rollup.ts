import { bucketEndAtOrAfter, bucketStart, type BucketSize } from './buckets.js'
import type { Micros } from './money.js'
import {
  intervalPieces,
  USAGE_COMPONENTS,
  type UsageComponent,
  type UsageInterval,
  type UsageProduct,
} from './usage.js'

/** The bucket sizes the ledger is rolled up by. Every history bucket is a whole number of one of them. */
export type RollupGrain = 'hour' | 'day' | 'month'
export const ROLLUP_GRAINS: readonly RollupGrain[] = ['hour', 'day', 'month']

/** The grain a history of `size` buckets adds up: weeks are whole UTC days, years whole months. */
export function grainOf(size: BucketSize): RollupGrain {
  return size === 'week' ? 'day' : size === 'year' ? 'month' : size
}

/** The cost of closed intervals in one grain bucket, of one resource or (resourceId null) of all of a GPU type. */
export interface RollupRow {
  accountId: string
  product: UsageProduct
  grain: RollupGrain
  bucket: number
  /** null: the row of every resource of the GPU type together. */
  resourceId: string | null
  /** '' for none (a key column). */
  gpuTypeId: string
  amounts: Record<UsageComponent, Micros>
}

/**
 * What closing `intervals` adds to the roll-ups: each one's cost split at the bounds of every grain by the
 * rule of `intervalPieces` (so each grain sums to the interval's cost exactly), added up per resource and per
 * GPU type. Parts (workers) go into their resource. A piece that costs nothing still makes its row: the row
 * says the resource had use in that bucket.
 */
export function rollupRows(intervals: Iterable<UsageInterval & { endedAt: number }>): RollupRow[] {
  const rows = new Map<string, RollupRow>()
  const add = (i: UsageInterval, grain: RollupGrain, bucket: number, resourceId: string | null, amount: Micros) => {
    const gpuTypeId = i.gpuTypeId ?? ''
    const key = `${i.accountId}\n${i.product}\n${grain}\n${bucket}\n${resourceId ?? ''}\n${gpuTypeId}\n${resourceId === null}`
    let row = rows.get(key)
    if (!row)
      rows.set(
        key,
        (row = {
          accountId: i.accountId,
          product: i.product,
          grain,
          bucket,
          resourceId,
          gpuTypeId,
          amounts: zeroAmounts(),
        }),
      )
    row.amounts[i.component] += amount
  }
  for (const i of intervals) {
    for (const grain of ROLLUP_GRAINS) {
      for (const p of intervalPieces(i, i.startedAt, i.endedAt, grain, i.endedAt)) {
        add(i, grain, p.bucket, i.resourceId, p.amount)
        add(i, grain, p.bucket, null, p.amount)
      }
    }
  }
  return [...rows.values()]
}

/** Every component at zero. */
function zeroAmounts(): Record<UsageComponent, Micros> {
  return Object.fromEntries(USAGE_COMPONENTS.map((c) => [c, 0])) as Record<UsageComponent, Micros>
}

/** A stretch of time read from one grain of the roll-ups. */
export interface GrainSpan {
  grain: RollupGrain
  from: number
  to: number
}

/**
 * [from, to) (hour bounds) as the fewest roll-up buckets: whole months as months, whole days left over as
 * days, the hours left at either end as hours. A year from mid-March is 2 partial days of hours, 2 partial
 * months of days and 11 months: a few hundred rows per resource rather than 8,760.
 */
export function grainSpans(from: number, to: number): GrainSpan[] {
  const spans: GrainSpan[] = []
  const push = (grain: RollupGrain, a: number, b: number) => {
    if (a < b) spans.push({ grain, from: a, to: b })
  }
  const dayFrom = bucketEndAtOrAfter(from, 'day')
  const dayTo = bucketStart(to, 'day')
  if (dayFrom >= dayTo) {
    push('hour', from, to)
    return spans
  }
  const monthFrom = bucketEndAtOrAfter(dayFrom, 'month')
  const monthTo = bucketStart(dayTo, 'month')
  push('hour', from, dayFrom)
  if (monthFrom >= monthTo) push('day', dayFrom, dayTo)
  else {
    push('day', dayFrom, monthFrom)
    push('month', monthFrom, monthTo)
    push('day', monthTo, dayTo)
  }
  push('hour', dayTo, to)
  return spans
}
