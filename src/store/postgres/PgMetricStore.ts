import type { Resolution } from '../../domain/metrics/buckets.js'
import type { MetricRow, MetricStore } from '../MetricStore.js'
import type { PgQueryable } from './PgQueryable.js'

interface Row {
  endpoint_id: string
  resolution: Resolution
  bucket: string
  replica: string
  data: string
}

/** Endpoint metric buckets in PostgreSQL (migration 140). */
export class PgMetricStore implements MetricStore {
  constructor(private readonly q: PgQueryable) {}

  async put(rows: readonly MetricRow[]): Promise<void> {
    if (rows.length === 0) return
    // One statement for the whole flush; a replica writes only its own rows, so nothing else contends.
    await this.q.query(
      `INSERT INTO metric_buckets (endpoint_id, resolution, bucket, replica, data)
       SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[])
       ON CONFLICT (endpoint_id, resolution, bucket, replica) DO UPDATE SET data = excluded.data`,
      [
        rows.map((r) => r.endpointId),
        rows.map((r) => r.resolution),
        rows.map((r) => r.bucket),
        rows.map((r) => r.replica),
        rows.map((r) => JSON.stringify(r.data)),
      ],
    )
  }

  async read(endpointIds: readonly string[], resolution: Resolution, from: number, to: number): Promise<MetricRow[]> {
    if (endpointIds.length === 0) return []
    const { rows } = await this.q.query<Row>(
      'SELECT * FROM metric_buckets WHERE endpoint_id = ANY($1::text[]) AND resolution = $2 AND bucket >= $3 AND bucket < $4 ORDER BY bucket',
      [endpointIds, resolution, from, to],
    )
    return rows.map((r) => ({
      endpointId: r.endpoint_id,
      resolution: r.resolution,
      bucket: Number(r.bucket),
      replica: r.replica,
      data: JSON.parse(r.data),
    }))
  }

  async prune(resolution: Resolution, before: number): Promise<number> {
    const { rowCount } = await this.q.query('DELETE FROM metric_buckets WHERE resolution = $1 AND bucket < $2', [
      resolution,
      before,
    ])
    return rowCount ?? 0
  }
}
