import type Database from 'better-sqlite3'
import type { WorkerRecord, WorkerStore } from '../WorkerStore.js'
import { toWorker, WORKER_COLUMNS as COLUMNS } from '../rows.js'

/** Workers in SQLite. */
export class SqliteWorkerStore implements WorkerStore {
  private readonly s
  private readonly updates = new Map<string, Database.Statement>()

  constructor(private readonly db: Database.Database) {
    this.s = {
      insert:
        db.prepare(`INSERT INTO workers (id, endpoint_id, account_id, state, token_hash, version, image, gpu_type_id, gpu_count, data_center_id, host_id, runtime_ref, created_at, started_at, stopped_at, last_error)
        VALUES (@id, @endpointId, @accountId, @state, @tokenHash, @version, @image, @gpuTypeId, @gpuCount, @dataCenterId, @hostId, @runtimeRef, @createdAt, @startedAt, @stoppedAt, @lastError)`),
      get: db.prepare('SELECT * FROM workers WHERE id = ?'),
      active: db.prepare(`SELECT * FROM workers WHERE state NOT IN ('EXITED', 'FAILED') ORDER BY created_at, id`),
      activeOf: db.prepare(
        `SELECT * FROM workers WHERE endpoint_id = ? AND state NOT IN ('EXITED', 'FAILED') ORDER BY created_at, id`,
      ),
      recent: db.prepare('SELECT * FROM workers WHERE endpoint_id = ? ORDER BY created_at DESC, id DESC LIMIT ?'),
    }
  }

  async insert(w: WorkerRecord): Promise<void> {
    this.s.insert.run(w)
  }

  async get(id: string): Promise<WorkerRecord | undefined> {
    const row = this.s.get.get(id) as Record<string, unknown> | undefined
    return row ? toWorker(row) : undefined
  }

  async update(id: string, patch: Partial<Omit<WorkerRecord, 'id' | 'endpointId' | 'accountId'>>): Promise<void> {
    const keys = Object.keys(patch).filter((k) => k in COLUMNS)
    if (keys.length === 0) return
    const sql = `UPDATE workers SET ${keys.map((k) => `${COLUMNS[k]} = @${k}`).join(', ')} WHERE id = @id`
    let stmt = this.updates.get(sql)
    if (!stmt) this.updates.set(sql, (stmt = this.db.prepare(sql)))
    stmt.run({ ...Object.fromEntries(keys.map((k) => [k, (patch as Record<string, unknown>)[k]])), id })
  }

  async listActive(endpointId?: string): Promise<WorkerRecord[]> {
    const rows = endpointId === undefined ? this.s.active.all() : this.s.activeOf.all(endpointId)
    return (rows as Array<Record<string, unknown>>).map(toWorker)
  }

  async listRecent(endpointId: string, limit: number): Promise<WorkerRecord[]> {
    return (this.s.recent.all(endpointId, limit) as Array<Record<string, unknown>>).map(toWorker)
  }
}
