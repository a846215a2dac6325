import { accrued, type Micros } from './money.js'
import { splitSpan, type BucketSize } from './buckets.js'

/** What is billed: the product lines of `/v2/billing`. `endpoint` (public endpoints) has no usage in Hangar. */
export type UsageProduct = 'pod' | 'serverless' | 'volume' | 'cluster' | 'endpoint'

/** The part of a product an interval pays for; each is an amount column of the billing records. */
export type UsageComponent = 'gpu' | 'cpu' | 'disk' | 'fee' | 'standard' | 'highPerformance' | 'networking'

export const USAGE_COMPONENTS: readonly UsageComponent[] = [
  'gpu',
  'cpu',
  'disk',
  'fee',
  'standard',
  'highPerformance',
  'networking',
]

/** Who and what an interval bills: one product component of one resource (and part of it). */
export interface UsageSubject {
  accountId: string
  product: UsageProduct
  component: UsageComponent
  /** The billed resource: pod, serverless endpoint, network volume or cluster id. */
  resourceId: string
  /** A part of it: the serverless worker, or a cluster's member pod; null for the resource as a whole. */
  partId: string | null
  /** GPU type of the pod, worker or cluster the usage belongs to (also on its disk); null for CPU and storage. */
  gpuTypeId: string | null
  /** GPUs, vCPUs or GB, as priced. */
  quantity: number
  /** Price of the whole quantity per `periodMs`, in micro-dollars, fixed when the interval opens. */
  priceMicros: Micros
  /** 1 hour for compute, 730 hours for per-GB-month storage. */
  periodMs: number
}

/** A span of use on the ledger; `endedAt` null while it runs. Times are ms since the epoch (UTC). */
export interface UsageInterval extends UsageSubject {
  id: number
  startedAt: number
  endedAt: number | null
}

/** The cost of an interval between `from` and `to` (clamped to its own span), by the rule of `accrued`. */
export function costBetween(
  i: Pick<UsageInterval, 'priceMicros' | 'periodMs' | 'startedAt'>,
  from: number,
  to: number,
): Micros {
  if (to <= from) return 0
  return accrued(i.priceMicros, i.periodMs, to - i.startedAt) - accrued(i.priceMicros, i.periodMs, from - i.startedAt)
}

/** One bucket's share of an interval. */
export interface IntervalPiece {
  bucket: number
  amount: Micros
}

/**
 * The shares of an interval in each `size` bucket between `from` and `to`; an open interval runs until `now`.
 * Shares of every split telescope to the same total (see `accrued`).
 */
export function intervalPieces(
  i: UsageInterval,
  from: number,
  to: number,
  size: BucketSize,
  now: number,
): IntervalPiece[] {
  const a = Math.max(from, i.startedAt)
  const b = Math.min(to, i.endedAt ?? now)
  return splitSpan(a, b, size).map((p) => ({ bucket: p.bucket, amount: costBetween(i, p.from, p.to) }))
}

/** The key of what one meter call opens and closes: everything of one resource part of one product. */
export function meterKey(s: Pick<UsageSubject, 'product' | 'resourceId' | 'partId'>): string {
  return `${s.product}:${s.resourceId}:${s.partId ?? ''}`
}
