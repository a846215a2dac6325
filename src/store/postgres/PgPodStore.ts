import type { PodRecord } from '../../domain/pods/pod.js'
import type { PodFilter, PodStore } from '../PodStore.js'
import type { PgQueryable } from './PgQueryable.js'

/** Pods in PostgreSQL: the record as JSON text beside the columns lists filter on. */
export class PgPodStore implements PodStore {
  constructor(private readonly q: PgQueryable) {}

  async insert(pod: PodRecord): Promise<void> {
    await this.q.query(
      'INSERT INTO pods (id, account_id, cluster_id, status, data, created_at) VALUES ($1, $2, $3, $4, $5, $6)',
      [pod.id, pod.accountId, pod.cluster?.id ?? null, pod.status, JSON.stringify(pod), pod.createdAt],
    )
  }

  async get(id: string): Promise<PodRecord | undefined> {
    const { rows } = await this.q.query<{ data: string }>('SELECT data FROM pods WHERE id = $1', [id])
    return rows.length ? (JSON.parse(rows[0].data) as PodRecord) : undefined
  }

  async list(filter: PodFilter): Promise<PodRecord[]> {
    const where: string[] = []
    const values: unknown[] = []
    if (filter.accountId !== undefined) where.push(`account_id = $${values.push(filter.accountId)}`)
    if (filter.clusterId !== undefined) where.push(`cluster_id = $${values.push(filter.clusterId)}`)
    else if (!filter.includeClusterPods) where.push('cluster_id IS NULL')
    return this.select(`${where.length ? `WHERE ${where.join(' AND ')}` : ''}`, values)
  }

  listHoldingCapacity(): Promise<PodRecord[]> {
    return this.select(`WHERE status NOT IN ('EXITED', 'TERMINATED')`, [])
  }

  async update(pod: PodRecord): Promise<boolean> {
    const r = await this.q.query('UPDATE pods SET cluster_id = $2, status = $3, data = $4 WHERE id = $1', [
      pod.id,
      pod.cluster?.id ?? null,
      pod.status,
      JSON.stringify(pod),
    ])
    return (r.rowCount ?? 0) > 0
  }

  async delete(id: string): Promise<boolean> {
    return ((await this.q.query('DELETE FROM pods WHERE id = $1', [id])).rowCount ?? 0) > 0
  }

  private async select(where: string, values: unknown[]): Promise<PodRecord[]> {
    const { rows } = await this.q.query<{ data: string }>(`SELECT data FROM pods ${where} ORDER BY seq`, values)
    return rows.map((r) => JSON.parse(r.data) as PodRecord)
  }
}
