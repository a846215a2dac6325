import type { BucketSize } from '../domain/billing/buckets.js'
import type { Micros } from '../domain/billing/money.js'
import type { UsageComponent, UsageInterval, UsageProduct, UsageSubject } from '../domain/billing/usage.js'

/** Which usage a read covers; an absent field matches everything. */
export interface UsageFilter {
  /** One account; absent = every account (operator summaries). */
  accountId?: string
  products: readonly UsageProduct[]
  resourceId?: string
  partId?: string
  gpuTypeId?: string
}

/** Filters of the roll-ups: parts (workers) are summed into their resource there. */
export type RollupFilter = Omit<UsageFilter, 'partId'>

/** How `sumRollup` groups: always by bucket and product, then by these columns (the others come back null). */
export interface RollupGrouping {
  /** Buckets of this size, summed from the roll-up grain it is made of (see domain/billing/rollup.ts grainOf). */
  size: BucketSize
  by: ReadonlyArray<'accountId' | 'resourceId' | 'gpuTypeId'>
}

/** The cost of closed intervals in one bucket and group, every component apart. */
export interface RollupSum {
  bucket: number
  product: UsageProduct
  accountId: string | null
  resourceId: string | null
  gpuTypeId: string | null
  amounts: Record<UsageComponent, Micros>
}

/**
 * The usage ledger: intervals of billed use, written as things start and stop, and roll-ups of the closed ones
 * per UTC hour, day and month, by resource and by GPU type (kept in the closing transaction, see
 * domain/billing/rollup.ts), so that histories read about one row per record instead of every interval.
 * Plain records, async, no driver types, like every store port.
 */
export interface UsageStore {
  /** Opens an interval at `at`; returns it with its id. */
  open(subject: UsageSubject, at: number): Promise<UsageInterval>
  /**
   * Closes open intervals at `at` (at their start if `at` is earlier) and adds their cost to the roll-ups,
   * atomically. Ids already closed are skipped.
   */
  close(ids: readonly number[], at: number): Promise<void>
  /** Writes finished intervals at once (imports, benchmarks), roll-up included. */
  insertClosed(intervals: ReadonlyArray<UsageSubject & { startedAt: number; endedAt: number }>): Promise<void>
  /** Every open interval. */
  listOpen(): Promise<UsageInterval[]>
  /** Intervals overlapping [from, to), open ones included, in start order. */
  listOverlapping(filter: UsageFilter, from: number, to: number): Promise<UsageInterval[]>
  /** Sums of the roll-ups (closed intervals) for [from, to) (bounds of `grouping.size` buckets), grouped, in no particular order. */
  sumRollup(filter: RollupFilter, from: number, to: number, grouping: RollupGrouping): Promise<RollupSum[]>
  /**
   * The resources with closed use in [from, to) (hour bounds); with `costly`, only those whose use there
   * cost something.
   */
  resourcesWithUse(filter: RollupFilter, from: number, to: number, opts?: { costly?: boolean }): Promise<string[]>
  /** The last time the control plane noted it was alive, or null before the first note. */
  lastAlive(): Promise<number | null>
  noteAlive(at: number): Promise<void>
}
