import type Database from 'better-sqlite3'
import type { PodRecord } from '../../domain/pods/pod.js'
import type { PodFilter, PodStore } from '../PodStore.js'

/** Pods in SQLite: the record as JSON beside the columns lists filter on. */
export class SqlitePodStore implements PodStore {
  private readonly s

  constructor(db: Database.Database) {
    this.s = {
      insert: db.prepare(
        `INSERT INTO pods (id, account_id, cluster_id, status, data, created_at, seq)
         VALUES (@id, @accountId, @clusterId, @status, @data, @createdAt, (SELECT coalesce(max(seq), 0) + 1 FROM pods))`,
      ),
      get: db.prepare('SELECT data FROM pods WHERE id = ?'),
      all: db.prepare('SELECT data FROM pods ORDER BY seq'),
      ofAccount: db.prepare('SELECT data FROM pods WHERE account_id = ? ORDER BY seq'),
      ofCluster: db.prepare('SELECT data FROM pods WHERE cluster_id = ? ORDER BY seq'),
      holding: db.prepare(`SELECT data FROM pods WHERE status NOT IN ('EXITED', 'TERMINATED') ORDER BY seq`),
      update: db.prepare('UPDATE pods SET cluster_id = @clusterId, status = @status, data = @data WHERE id = @id'),
      delete: db.prepare('DELETE FROM pods WHERE id = ?'),
    }
  }

  async insert(pod: PodRecord): Promise<void> {
    this.s.insert.run(row(pod))
  }

  async get(id: string): Promise<PodRecord | undefined> {
    const r = this.s.get.get(id) as { data: string } | undefined
    return r ? parse(r) : undefined
  }

  async list(filter: PodFilter): Promise<PodRecord[]> {
    const rows = (
      filter.clusterId !== undefined
        ? this.s.ofCluster.all(filter.clusterId)
        : filter.accountId !== undefined
          ? this.s.ofAccount.all(filter.accountId)
          : this.s.all.all()
    ) as Array<{ data: string }>
    return rows
      .map(parse)
      .filter((p) => filter.accountId === undefined || p.accountId === filter.accountId)
      .filter((p) => filter.clusterId !== undefined || filter.includeClusterPods || p.cluster === null)
  }

  async listHoldingCapacity(): Promise<PodRecord[]> {
    return (this.s.holding.all() as Array<{ data: string }>).map(parse)
  }

  async update(pod: PodRecord): Promise<boolean> {
    const { id, clusterId, status, data } = row(pod)
    return this.s.update.run({ id, clusterId, status, data }).changes > 0
  }

  async delete(id: string): Promise<boolean> {
    return this.s.delete.run(id).changes > 0
  }
}

function row(pod: PodRecord) {
  return {
    id: pod.id,
    accountId: pod.accountId,
    clusterId: pod.cluster?.id ?? null,
    status: pod.status,
    data: JSON.stringify(pod),
    createdAt: pod.createdAt,
  }
}

function parse(r: { data: string }): PodRecord {
  return JSON.parse(r.data) as PodRecord
}
