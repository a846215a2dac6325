import { nextBucket, type BucketSize } from './buckets.js'
import { microsToUsd, type Micros } from './money.js'
import { amountFields, ROUTES, type BillingRoute, type Grouping } from './routes.js'
import { USAGE_COMPONENTS, type UsageComponent, type UsageProduct } from './usage.js'

/**
 * One bucket's amounts of one subject, by component, the input of `buildRecords`: a piece of an interval, or a
 * roll-up sum, which leaves the columns it was not grouped by null (and has no part).
 */
export interface Contribution {
  bucket: number
  product: UsageProduct
  resourceId: string | null
  partId?: string | null
  gpuTypeId: string | null
  amounts: Partial<Record<UsageComponent, Micros>>
}

/** A billing record as the API answers it: bucket bounds, key fields, USD amounts. */
export type BillingRecord = { startTime: string; endTime: string } & Record<string, string | number | null>

export interface BuiltRecords {
  records: BillingRecord[]
  /** Sums of every amount field over the records, in micro-dollars (exactly the records' sum). */
  totals: Record<string, Micros>
  /** Distinct resources behind the records (of the contributions that name theirs and cost something). */
  uniqueResources: number
}

interface Acc {
  /** The first contribution of the group, which names its keys. */
  first: Contribution
  /** Micro-dollars by amount field, in the order of `amountFields` (`totalAmount` first). */
  micros: Micros[]
}

/**
 * Sums contributions into one record per bucket and group (`grouping` for pods and serverless, the resource
 * for volumes and clusters, the bucket alone for the aggregate). Amounts stay integers until the response:
 * `totalAmount` is the sum of the record's fields and `totals` the sum of the records, to the micro-dollar.
 * The aggregate has a record for every bucket of [start, end), zero or not; other routes only where there was
 * use that cost something. Records come in bucket order, then by key. A year of 100 pods by day is 36,600
 * records, so this allocates little more than the records: they are copies of one template (one shape).
 */
export function buildRecords(
  route: BillingRoute,
  grouping: Grouping | null,
  size: BucketSize,
  start: number,
  end: number,
  contributions: Iterable<Contribution>,
): BuiltRecords {
  const shape = ROUTES[route]
  const fields = amountFields(route)
  // The index in `fields` of each product's components; `totalAmount` (0) takes every one too.
  const slots: Partial<Record<string, Partial<Record<string, number>>>> = {}
  for (const [key, field] of Object.entries(shape.fields)) {
    const [product, component] = key.split('.')
    slots[product] = { ...slots[product], [component]: fields.indexOf(field) }
  }
  const group = grouper(route, grouping)
  const buckets = new Map<number, Map<string, Acc>>()
  const bucket = (b: number) => {
    let groups = buckets.get(b)
    if (!groups) buckets.set(b, (groups = new Map()))
    return groups
  }
  const none: Contribution = { bucket: 0, product: 'pod', resourceId: null, gpuTypeId: null, amounts: {} }
  if (route === 'aggregate')
    for (let b = start; b < end; b = nextBucket(b, size))
      bucket(b).set('', { first: none, micros: fields.map(() => 0) })
  const resources = new Set<string>()
  for (const c of contributions) {
    const slot = slots[c.product]
    if (!slot || c.bucket < start || c.bucket >= end) continue
    let acc: Acc | undefined
    for (const component of USAGE_COMPONENTS) {
      const amount = c.amounts[component]
      const f = slot[component]
      if (!amount || f === undefined) continue
      if (!acc) {
        const id = group.id(c)
        const groups = bucket(c.bucket)
        acc = groups.get(id)
        if (!acc) groups.set(id, (acc = { first: c, micros: fields.map(() => 0) }))
        if (c.resourceId !== null) resources.add(c.resourceId)
      }
      acc.micros[f] += amount
      acc.micros[0] += amount
    }
  }
  const template: BillingRecord = {
    startTime: '',
    endTime: '',
    ...Object.fromEntries(shape.keys.map((k) => [k, null])),
    ...Object.fromEntries(fields.map((f) => [f, 0])),
  }
  const totals = fields.map(() => 0)
  const records: BillingRecord[] = []
  // A bucket's end is the next one's start: each bound is written once (a year of hours is 8,760 of them).
  let bound = { at: Number.NaN, iso: '' }
  for (const b of [...buckets.keys()].sort((x, y) => x - y)) {
    const startTime = b === bound.at ? bound.iso : new Date(b).toISOString()
    const next = nextBucket(b, size)
    bound = { at: next, iso: new Date(next).toISOString() }
    const endTime = bound.iso
    const accs = [...buckets.get(b)!.values()].map((a) => ({ a, keys: group.keys(a.first) }))
    for (const { a, keys } of accs.sort((x, y) => keyOrder(x.keys, y.keys, shape.keys))) {
      const rec = { ...template }
      rec.startTime = startTime
      rec.endTime = endTime
      for (const k of shape.keys) rec[k] = keys[k] ?? null
      for (let f = 0; f < fields.length; f++) {
        totals[f] += a.micros[f]
        rec[fields[f]] = microsToUsd(a.micros[f])
      }
      records.push(rec)
    }
  }
  return { records, totals: Object.fromEntries(fields.map((f, n) => [f, totals[n]])), uniqueResources: resources.size }
}

/**
 * How a route groups contributions: the group of one, and its record's key fields. A finer grouping also fills
 * the coarser keys it determines (a pod has one GPU type; a worker one endpoint and one GPU type); the others
 * are null.
 */
function grouper(
  route: BillingRoute,
  grouping: Grouping | null,
): { id(c: Contribution): string; keys(c: Contribution): Record<string, string | null> } {
  switch (route) {
    case 'pods':
      return grouping === 'podId'
        ? { id: (c) => c.resourceId ?? '', keys: (c) => ({ podId: c.resourceId, gpuId: c.gpuTypeId }) }
        : { id: (c) => c.gpuTypeId ?? '', keys: (c) => ({ gpuId: c.gpuTypeId }) }
    case 'serverless':
      if (grouping === 'podId')
        return {
          id: (c) => c.partId ?? '',
          keys: (c) => ({ serverlessId: c.resourceId, podId: c.partId ?? null, gpuId: c.gpuTypeId }),
        }
      if (grouping === 'gpuId') return { id: (c) => c.gpuTypeId ?? '', keys: (c) => ({ gpuId: c.gpuTypeId }) }
      return { id: (c) => c.resourceId ?? '', keys: (c) => ({ serverlessId: c.resourceId }) }
    case 'networkVolumes':
      return { id: (c) => c.resourceId ?? '', keys: (c) => ({ networkVolumeId: c.resourceId }) }
    case 'clusters':
      return { id: (c) => c.resourceId ?? '', keys: (c) => ({ clusterId: c.resourceId }) }
    default:
      return { id: () => '', keys: () => ({}) }
  }
}

function keyOrder(x: Record<string, string | null>, y: Record<string, string | null>, keys: readonly string[]): number {
  for (const k of keys) {
    const a = x[k] ?? ''
    const b = y[k] ?? ''
    if (a !== b) return a < b ? -1 : 1
  }
  return 0
}
