import type { AuditQuery, AuditRecord, NewAuditRecord } from './AuditStore.js'

/** The audit_log columns in the order `auditValues` gives them. */
export const AUDIT_COLUMNS =
  'at, account_id, actor_type, actor_id, action, resource_type, resource_id, outcome, status, ip, request_id'

/** A new entry's values, in AUDIT_COLUMNS order. */
export function auditValues(r: NewAuditRecord): unknown[] {
  return [
    r.at,
    r.actor.accountId,
    r.actor.type,
    r.actor.id,
    r.action,
    r.resourceType,
    r.resourceId,
    r.outcome,
    r.status,
    r.ip,
    r.requestId,
  ]
}

/**
 * The SELECT of an audit query for both dialects, which differ only in how parameters are written
 * (`param(n)` gives the n-th, from 1). Newest first.
 */
export function auditSelect(q: AuditQuery, param: (n: number) => string): { sql: string; values: unknown[] } {
  const where: string[] = []
  const values: unknown[] = []
  const add = (clause: (p: string) => string, value: unknown) => {
    values.push(value)
    where.push(clause(param(values.length)))
  }
  if (q.accountId !== undefined) add((p) => `account_id = ${p}`, q.accountId)
  if (q.actorId !== undefined) add((p) => `actor_id = ${p}`, q.actorId)
  if (q.action !== undefined) {
    if (q.action.endsWith('.')) add((p) => `substr(action, 1, ${q.action!.length}) = ${p}`, q.action)
    else add((p) => `action = ${p}`, q.action)
  }
  if (q.resourceType !== undefined) add((p) => `resource_type = ${p}`, q.resourceType)
  if (q.resourceId !== undefined) add((p) => `resource_id = ${p}`, q.resourceId)
  if (q.since !== undefined) add((p) => `at >= ${p}`, q.since)
  if (q.until !== undefined) add((p) => `at < ${p}`, q.until)
  if (q.beforeSeq !== undefined) add((p) => `seq < ${p}`, q.beforeSeq)
  values.push(q.limit)
  const sql = `SELECT seq, ${AUDIT_COLUMNS} FROM audit_log${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY seq DESC LIMIT ${param(values.length)}`
  return { sql, values }
}

/** A row of audit_log as the port's record. */
export function auditRecord(row: Record<string, unknown>): AuditRecord {
  return {
    seq: Number(row.seq),
    at: Number(row.at),
    actor: {
      type: row.actor_type as AuditRecord['actor']['type'],
      id: row.actor_id as string,
      accountId: row.account_id as string,
    },
    action: row.action as string,
    resourceType: row.resource_type as string,
    resourceId: (row.resource_id as string | null) ?? null,
    outcome: row.outcome as AuditRecord['outcome'],
    status: Number(row.status),
    ip: (row.ip as string | null) ?? null,
    requestId: (row.request_id as string | null) ?? null,
  }
}
