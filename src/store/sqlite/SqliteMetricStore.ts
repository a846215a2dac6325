import type Database from 'better-sqlite3'
import type { Resolution } from '../../domain/metrics/buckets.js'
import type { MetricRow, MetricStore } from '../MetricStore.js'

interface Row {
  endpoint_id: string
  resolution: Resolution
  bucket: number
  replica: string
  data: string
}

/** Endpoint metric buckets in SQLite (migration 140). */
export class SqliteMetricStore implements MetricStore {
  private readonly s

  constructor(private readonly db: Database.Database) {
    this.s = {
      put: db.prepare(`INSERT INTO metric_buckets (endpoint_id, resolution, bucket, replica, data) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (endpoint_id, resolution, bucket, replica) DO UPDATE SET data = excluded.data`),
      read: db.prepare(
        `SELECT * FROM metric_buckets WHERE endpoint_id IN (SELECT value FROM json_each(?)) AND resolution = ? AND bucket >= ? AND bucket < ? ORDER BY bucket`,
      ),
      prune: db.prepare('DELETE FROM metric_buckets WHERE resolution = ? AND bucket < ?'),
    }
  }

  async put(rows: readonly MetricRow[]): Promise<void> {
    this.db.transaction(() => {
      for (const r of rows) this.s.put.run(r.endpointId, r.resolution, r.bucket, r.replica, JSON.stringify(r.data))
    })()
  }

  async read(endpointIds: readonly string[], resolution: Resolution, from: number, to: number): Promise<MetricRow[]> {
    if (endpointIds.length === 0) return []
    return (this.s.read.all(JSON.stringify(endpointIds), resolution, from, to) as Row[]).map(toRow)
  }

  async prune(resolution: Resolution, before: number): Promise<number> {
    return this.s.prune.run(resolution, before).changes
  }
}

function toRow(r: Row): MetricRow {
  return {
    endpointId: r.endpoint_id,
    resolution: r.resolution,
    bucket: Number(r.bucket),
    replica: r.replica,
    data: JSON.parse(r.data),
  }
}
