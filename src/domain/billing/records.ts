import { nextBucket, type BucketSize } from './buckets.js'
import { microsToUsd, type Micros } from './money.js'
import { amountFields, ROUTES, type BillingRoute, type Grouping } from './routes.js'
import type { UsageSubject } from './usage.js'

/**
 * One bucket's amount of one subject, the input of `buildRecords`. Sums that are already grouped leave the
 * columns they were not grouped by null.
 */
export interface Contribution {
  bucket: number
  subject: Pick<UsageSubject, 'product' | 'component'> & { resourceId: string | null; partId: string | null; gpuTypeId: string | null }
  amount: Micros
}

/** A billing record as the API answers it: bucket bounds, key fields, USD amounts. */
export type BillingRecord = { startTime: string; endTime: string } & Record<string, string | number | null>

export interface BuiltRecords {
  records: BillingRecord[]
  /** Sums of every amount field over the records, in micro-dollars (exactly the records' sum). */
  totals: Record<string, Micros>
  /** Distinct resources behind the records (of the contributions that name theirs). */
  uniqueResources: number
}

interface Acc {
  bucket: number
  keys: Record<string, string | null>
  micros: Record<string, Micros>
}

/**
 * Sums contributions into one record per bucket and group (`grouping` for pods and serverless, the resource
 * for volumes and clusters, the bucket alone for the aggregate). Amounts stay integers until the response:
 * `totalAmount` is the sum of the record's fields and `totals` the sum of the records, to the micro-dollar.
 * The aggregate has a record for every bucket of [start, end), zero or not; other routes only where there was use.
 */
export function buildRecords(route: BillingRoute, grouping: Grouping | null, size: BucketSize, start: number, end: number, contributions: Iterable<Contribution>): BuiltRecords {
  const shape = ROUTES[route]
  const fields = amountFields(route)
  const groups = new Map<string, Acc>()
  const resources = new Set<string>()
  const acc = (bucket: number, keys: Record<string, string | null>, id: string) => {
    const k = `${bucket}|${id}`
    let a = groups.get(k)
    if (!a) groups.set(k, (a = { bucket, keys, micros: Object.fromEntries(fields.map((f) => [f, 0])) }))
    return a
  }
  if (route === 'aggregate') for (let b = start; b < end; b = nextBucket(b, size)) acc(b, {}, '')
  for (const c of contributions) {
    const field = shape.fields[`${c.subject.product}.${c.subject.component}`]
    if (!field || c.bucket < start || c.bucket >= end) continue
    const { id, keys } = groupOf(route, grouping, c.subject)
    const a = acc(c.bucket, keys, id)
    a.micros[field] += c.amount
    a.micros.totalAmount += c.amount
    if (c.subject.resourceId !== null) resources.add(c.subject.resourceId)
  }
  const sorted = [...groups.values()].sort((x, y) => x.bucket - y.bucket || keyOrder(x, y, shape.keys))
  const totals: Record<string, Micros> = Object.fromEntries(fields.map((f) => [f, 0]))
  const records = sorted.map((a) => {
    for (const f of fields) totals[f] += a.micros[f]
    const rec: BillingRecord = { startTime: new Date(a.bucket).toISOString(), endTime: new Date(nextBucket(a.bucket, size)).toISOString() }
    for (const k of shape.keys) rec[k] = a.keys[k] ?? null
    for (const f of fields) rec[f] = microsToUsd(a.micros[f])
    return rec
  })
  return { records, totals, uniqueResources: resources.size }
}

/**
 * The group of a contribution and its record's key fields. A finer grouping also fills the coarser keys it
 * determines (a pod has one GPU type; a worker one endpoint and one GPU type); the others are null.
 */
function groupOf(route: BillingRoute, grouping: Grouping | null, s: Contribution['subject']): { id: string; keys: Record<string, string | null> } {
  switch (route) {
    case 'pods':
      return grouping === 'podId' ? { id: s.resourceId ?? '', keys: { podId: s.resourceId, gpuId: s.gpuTypeId } } : { id: s.gpuTypeId ?? '', keys: { gpuId: s.gpuTypeId } }
    case 'serverless':
      if (grouping === 'podId') return { id: s.partId ?? '', keys: { serverlessId: s.resourceId, podId: s.partId, gpuId: s.gpuTypeId } }
      if (grouping === 'gpuId') return { id: s.gpuTypeId ?? '', keys: { gpuId: s.gpuTypeId } }
      return { id: s.resourceId ?? '', keys: { serverlessId: s.resourceId } }
    case 'networkVolumes':
      return { id: s.resourceId ?? '', keys: { networkVolumeId: s.resourceId } }
    case 'clusters':
      return { id: s.resourceId ?? '', keys: { clusterId: s.resourceId } }
    default:
      return { id: '', keys: {} }
  }
}

function keyOrder(x: Acc, y: Acc, keys: readonly string[]): number {
  for (const k of keys) {
    const a = x.keys[k] ?? ''
    const b = y.keys[k] ?? ''
    if (a !== b) return a < b ? -1 : 1
  }
  return 0
}
