import type { AnyBillingQuery } from '../../contract/billing.js'
import { DomainError, Violations } from '../errors.js'
import { bucketEndAtOrAfter, bucketsBefore, bucketStart, countBuckets, nextBucket, type BucketSize } from './buckets.js'
import { ROUTES, type BillingRoute, type Grouping } from './routes.js'

/** Most buckets one request may span (e.g. a year of hours is 8,760). */
export const MAX_BUCKETS = 10_000
const DEFAULT_RANGE_MS = 30 * 24 * 3_600_000

/** A billing request with its range snapped to bucket bounds and its filters checked. */
export interface ResolvedQuery {
  route: BillingRoute
  start: number
  end: number
  bucketSize: BucketSize
  grouping: Grouping | null
  filters: {
    resourceId?: string
    partId?: string
    gpuTypeId?: string
  }
  /** The `metadata.query` of the answer: resolved times, bucket size, grouping and the route's filters. */
  echo: Record<string, string | null>
}

/**
 * Applies the query rules of `/v2/billing/*` at `now`: `startTime` snapped down to its bucket's start,
 * `endTime` (exclusive) up to its bucket's end, defaults now - 30 days .. now; `lastN` = the last N buckets
 * including the current one, never with a time range. Rule breaks are 400 problems naming the parameter
 * (schema breaks, 422, are the route's business).
 */
export function resolveQuery(route: BillingRoute, q: AnyBillingQuery, now: number): ResolvedQuery {
  const size: BucketSize = q.bucketSize ?? 'day'
  const v = new Violations()
  if (q.lastN !== undefined && (q.startTime !== undefined || q.endTime !== undefined)) {
    v.add(
      'lastN',
      `cannot be combined with ${[q.startTime !== undefined && 'startTime', q.endTime !== undefined && 'endTime'].filter(Boolean).join(' and ')}: ask for the last N buckets or for a time range`,
    )
  }
  if (q.serverlessId !== undefined && q.endpointId !== undefined && q.serverlessId !== q.endpointId) {
    v.add(
      'endpointId',
      `${JSON.stringify(q.endpointId)} differs from serverlessId ${JSON.stringify(q.serverlessId)}; they name the same filter`,
    )
  }
  let start: number
  let end: number
  if (q.lastN !== undefined) {
    const current = bucketStart(now, size)
    end = nextBucket(current, size)
    start = bucketsBefore(current, size, q.lastN - 1)
  } else {
    const rawEnd = q.endTime !== undefined ? Date.parse(q.endTime) : now
    const rawStart = q.startTime !== undefined ? Date.parse(q.startTime) : rawEnd - DEFAULT_RANGE_MS
    if (rawStart >= rawEnd) {
      v.add(
        'startTime',
        `${q.startTime ?? new Date(rawStart).toISOString()} is not before endTime ${q.endTime ?? `${new Date(rawEnd).toISOString()} (now)`}`,
      )
    }
    start = bucketStart(rawStart, size)
    end = bucketEndAtOrAfter(rawEnd, size)
  }
  v.throwIfAny('bad_request')
  if (countBuckets(start, end, size, MAX_BUCKETS) > MAX_BUCKETS) {
    const line = `bucketSize: the range ${new Date(start).toISOString()} .. ${new Date(end).toISOString()} holds more than ${MAX_BUCKETS} ${size} buckets; at most ${MAX_BUCKETS} per request: choose a larger bucketSize or a shorter range`
    throw new DomainError('bad_request', line, [line])
  }

  const shape = ROUTES[route]
  const asked = q.grouping === 'gpuTypeId' ? 'gpuId' : q.grouping
  const grouping = (asked as Grouping | undefined) ?? shape.defaultGrouping
  const filters: ResolvedQuery['filters'] = {}
  const echo: Record<string, string | null> = {
    startTime: new Date(start).toISOString(),
    endTime: new Date(end).toISOString(),
    bucketSize: size,
  }
  if (shape.groupings.length) echo.grouping = grouping
  switch (route) {
    case 'pods':
      Object.assign(filters, defined({ resourceId: q.podId, gpuTypeId: q.gpuId }))
      Object.assign(echo, { podId: q.podId ?? null, gpuId: q.gpuId ?? null })
      break
    case 'serverless': {
      const endpoint = q.serverlessId ?? q.endpointId
      Object.assign(filters, defined({ resourceId: endpoint, partId: q.podId, gpuTypeId: q.gpuId }))
      Object.assign(echo, { serverlessId: endpoint ?? null, podId: q.podId ?? null, gpuId: q.gpuId ?? null })
      break
    }
    case 'networkVolumes':
      Object.assign(filters, defined({ resourceId: q.networkVolumeId }))
      echo.networkVolumeId = q.networkVolumeId ?? null
      break
    case 'clusters':
      Object.assign(filters, defined({ resourceId: q.clusterId }))
      echo.clusterId = q.clusterId ?? null
      break
  }
  return { route, start, end, bucketSize: size, grouping, filters, echo }
}

function defined<T extends Record<string, string | undefined>>(o: T): Partial<Record<keyof T, string>> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<Record<keyof T, string>>
}
