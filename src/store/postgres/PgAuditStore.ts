import type { AuditQuery, AuditRecord, AuditStore, NewAuditRecord } from '../AuditStore.js'
import { AUDIT_COLUMNS, auditRecord, auditSelect, auditValues } from '../auditSql.js'
import type { PgQueryable } from './PgQueryable.js'

/** The audit log in PostgreSQL (migration 160). */
export class PgAuditStore implements AuditStore {
  constructor(private readonly q: PgQueryable) {}

  async append(record: NewAuditRecord): Promise<void> {
    await this.q.query(
      `INSERT INTO audit_log (${AUDIT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      auditValues(record),
    )
  }

  async query(q: AuditQuery): Promise<AuditRecord[]> {
    const { sql, values } = auditSelect(q, (n) => `$${n}`)
    const { rows } = await this.q.query(sql, values)
    return rows.map(auditRecord)
  }

  async prune(before: number): Promise<number> {
    const { rowCount } = await this.q.query('DELETE FROM audit_log WHERE at < $1', [before])
    return rowCount ?? 0
  }
}
