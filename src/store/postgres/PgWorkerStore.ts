import type { WorkerRecord, WorkerStore } from '../WorkerStore.js'
import { toWorker, WORKER_COLUMNS as COLUMNS } from '../rows.js'
import type { PgQueryable } from './PgQueryable.js'

/** Workers in PostgreSQL. */
export class PgWorkerStore implements WorkerStore {
  constructor(private readonly q: PgQueryable) {}

  async insert(w: WorkerRecord): Promise<void> {
    await this.q.query(
      `INSERT INTO workers (id, endpoint_id, account_id, state, token_hash, version, image, gpu_type_id, gpu_count, data_center_id, host_id, runtime_ref, created_at, started_at, stopped_at, last_error)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
      [
        w.id,
        w.endpointId,
        w.accountId,
        w.state,
        w.tokenHash,
        w.version,
        w.image,
        w.gpuTypeId,
        w.gpuCount,
        w.dataCenterId,
        w.hostId,
        w.runtimeRef,
        w.createdAt,
        w.startedAt,
        w.stoppedAt,
        w.lastError,
      ],
    )
  }

  async get(id: string): Promise<WorkerRecord | undefined> {
    const { rows } = await this.q.query('SELECT * FROM workers WHERE id = $1', [id])
    return rows.length ? toWorker(rows[0]) : undefined
  }

  async update(id: string, patch: Partial<Omit<WorkerRecord, 'id' | 'endpointId' | 'accountId'>>): Promise<void> {
    const keys = Object.keys(patch).filter((k) => k in COLUMNS)
    if (keys.length === 0) return
    const values = keys.map((k) => (patch as Record<string, unknown>)[k])
    await this.q.query(
      `UPDATE workers SET ${keys.map((k, i) => `${COLUMNS[k]} = $${i + 2}`).join(', ')} WHERE id = $1`,
      [id, ...values],
    )
  }

  async listActive(endpointId?: string): Promise<WorkerRecord[]> {
    const r =
      endpointId === undefined
        ? await this.q.query(`SELECT * FROM workers WHERE state NOT IN ('EXITED', 'FAILED') ORDER BY created_at, id`)
        : await this.q.query(
            `SELECT * FROM workers WHERE endpoint_id = $1 AND state NOT IN ('EXITED', 'FAILED') ORDER BY created_at, id`,
            [endpointId],
          )
    return r.rows.map(toWorker)
  }

  async listRecent(endpointId: string, limit: number): Promise<WorkerRecord[]> {
    return (
      await this.q.query('SELECT * FROM workers WHERE endpoint_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2', [
        endpointId,
        limit,
      ])
    ).rows.map(toWorker)
  }
}
