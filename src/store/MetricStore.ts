import type { BucketData, Resolution } from '../domain/metrics/buckets.js'

/** One replica's tally of one endpoint over one time bucket. */
export interface MetricRow {
  endpointId: string
  resolution: Resolution
  /** Start of the bucket, epoch ms (a multiple of the resolution). */
  bucket: number
  /** The process that counted it: each replica writes only its own rows, so flushes never contend. */
  replica: string
  data: BucketData
}

/**
 * Endpoint metrics kept in time buckets. Every replica flushes what it counted as rows of its own
 * (replacing its earlier row of the same bucket); readers merge the rows of all replicas.
 */
export interface MetricStore {
  /** Writes rows, each replacing the row of the same endpoint, resolution, bucket and replica. */
  put(rows: readonly MetricRow[]): Promise<void>
  /** The rows of these endpoints at `resolution` with a bucket in [from, to), of every replica, by bucket. */
  read(endpointIds: readonly string[], resolution: Resolution, from: number, to: number): Promise<MetricRow[]>
  /** Deletes the rows at `resolution` whose bucket starts before `before`; returns how many went. */
  prune(resolution: Resolution, before: number): Promise<number>
}
