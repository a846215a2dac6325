/**
 * Who did something. A key today; a console member (issue 36, item 3) or the control plane itself later,
 * which is why the actor is a typed reference rather than a key id.
 */
export interface AuditActor {
  type: 'key' | 'member' | 'system'
  /** The key's, member's or component's id. */
  id: string
  /** The account the actor acts for: its records are that account's. */
  accountId: string
}

/** One entry of the audit log: appended once, never changed (retention deletes whole entries by age). */
export interface AuditRecord {
  /** Unique, ordered: later entries have higher ids, and paging goes by them. Assigned by the store. */
  seq: number
  /** When, epoch ms. */
  at: number
  actor: AuditActor
  /** `<resource>.<verb>`, e.g. `endpoint.create`, `key.revoke`, `secret.update`. */
  action: string
  resourceType: string
  /** Null where the request names none and created none (a refused create). */
  resourceId: string | null
  outcome: 'success' | 'refused' | 'failed'
  /** The HTTP status answered. */
  status: number
  /** The client's address (Fastify's `req.ip`, which honours `trustProxy` where configured). */
  ip: string | null
  /** The request's id (`x-request-id`), to find its line in the request log. */
  requestId: string | null
}

/** An entry to append: everything but its `seq`. */
export type NewAuditRecord = Omit<AuditRecord, 'seq'>

/** What `query` filters by; every field narrows, absent ones do not. */
export interface AuditQuery {
  /** Entries of this account only (an account's own view). */
  accountId?: string
  actorId?: string
  /** An exact action, or a prefix ending in `.` (`pod.` matches every pod action). */
  action?: string
  resourceType?: string
  resourceId?: string
  /** Epoch ms, inclusive. */
  since?: number
  /** Epoch ms, exclusive. */
  until?: number
  /** Entries older than this seq only (the cursor of the page before). */
  beforeSeq?: number
  /** Most entries to return. */
  limit: number
}

/** The audit log: append-only storage of changes, newest first when read. Outside transactions, like metrics. */
export interface AuditStore {
  append(record: NewAuditRecord): Promise<void>
  /** Matching entries, newest first (highest seq first). */
  query(q: AuditQuery): Promise<AuditRecord[]>
  /** Deletes the entries older than `before` (epoch ms); returns how many went. The only deletion there is. */
  prune(before: number): Promise<number>
}
