import type Database from 'better-sqlite3'
import type { AuditQuery, AuditRecord, AuditStore, NewAuditRecord } from '../AuditStore.js'
import { AUDIT_COLUMNS, auditRecord, auditSelect, auditValues } from '../auditSql.js'

/** The audit log in SQLite (migration 160). */
export class SqliteAuditStore implements AuditStore {
  private readonly insert
  private readonly del
  /** Prepared queries by their SQL: a page query has one of a few dozen shapes (which filters are set). */
  private readonly queries = new Map<string, Database.Statement>()

  constructor(private readonly db: Database.Database) {
    this.insert = db.prepare(`INSERT INTO audit_log (${AUDIT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
    this.del = db.prepare('DELETE FROM audit_log WHERE at < ?')
  }

  async append(record: NewAuditRecord): Promise<void> {
    this.insert.run(...auditValues(record))
  }

  async query(q: AuditQuery): Promise<AuditRecord[]> {
    const { sql, values } = auditSelect(q, () => '?')
    let stmt = this.queries.get(sql)
    if (!stmt) this.queries.set(sql, (stmt = this.db.prepare(sql)))
    return (stmt.all(...values) as Array<Record<string, unknown>>).map(auditRecord)
  }

  async prune(before: number): Promise<number> {
    return this.del.run(before).changes
  }
}
