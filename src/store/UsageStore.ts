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

/** Filters of the daily roll-up: parts (workers) are summed into their resource there. */
export type DailyFilter = Omit<UsageFilter, 'partId'>

/** How `sumDaily` groups: always by bucket and product, then by these columns (the others come back null). */
export interface DailyGrouping {
  /** `day`, or a size made of whole UTC days (weeks start on Monday). */
  size: 'day' | 'week' | 'month' | 'year'
  by: ReadonlyArray<'accountId' | 'resourceId' | 'gpuTypeId'>
}

/** The cost of closed intervals in one bucket and group, every component apart. */
export interface DailySum {
  bucket: number
  product: UsageProduct
  accountId: string | null
  resourceId: string | null
  gpuTypeId: string | null
  amounts: Record<UsageComponent, Micros>
}

/**
 * The usage ledger: intervals of billed use, written as things start and stop, and a daily roll-up of the
 * closed ones (kept in the same transaction) so that long histories answer without reading every interval.
 * Plain records, async, no driver types, like every store port.
 */
export interface UsageStore {
  /** Opens an interval at `at`; returns it with its id. */
  open(subject: UsageSubject, at: number): Promise<UsageInterval>
  /**
   * Closes open intervals at `at` (at their start if `at` is earlier) and adds their cost to the daily
   * roll-up, atomically. Ids already closed are skipped.
   */
  close(ids: readonly number[], at: number): Promise<void>
  /** Writes finished intervals at once (imports, benchmarks), roll-up included. */
  insertClosed(intervals: ReadonlyArray<UsageSubject & { startedAt: number; endedAt: number }>): Promise<void>
  /** Every open interval. */
  listOpen(): Promise<UsageInterval[]>
  /** Intervals overlapping [from, to), open ones included, in start order. */
  listOverlapping(filter: UsageFilter, from: number, to: number): Promise<UsageInterval[]>
  /** Sums of the daily roll-up (closed intervals) for the days in [from, to) (UTC day bounds), grouped. */
  sumDaily(filter: DailyFilter, from: number, to: number, grouping: DailyGrouping): Promise<DailySum[]>
  /** The resources with closed use in the days in [from, to). */
  resourcesWithUse(filter: DailyFilter, from: number, to: number): Promise<string[]>
  /** The last time the control plane noted it was alive, or null before the first note. */
  lastAlive(): Promise<number | null>
  noteAlive(at: number): Promise<void>
}
