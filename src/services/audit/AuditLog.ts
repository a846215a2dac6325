import type { AuditEntry, AuditPage, AuditQuery } from '../../contract/audit.js'
import { iso, type Clock } from '../../domain/clock.js'
import { DomainError } from '../../domain/errors.js'
import type { AuditRecord, AuditQuery as StoreQuery, NewAuditRecord } from '../../store/AuditStore.js'
import type { Store } from '../../store/Store.js'
import type { Principal } from '../accounts/AccountService.js'
import type { Log } from '../log.js'

const DAY_MS = 86_400_000
/** Entries read per store query while exporting. */
const EXPORT_PAGE = 1000

/** What the audit log needs. */
export interface AuditLogOptions {
  store: Store
  clock: Clock
  log: Log
  /** Entries older than this many days are deleted; 0 keeps them forever. */
  retentionDays: number
  /** How often old entries are deleted, ms (hourly by default). */
  pruneEveryMs?: number
}

/**
 * The audit log: appends what the API layer reports (`record`, never awaited by a request), answers queries
 * scoped to the caller's account (the admin sees every account), and deletes entries past their retention.
 */
export class AuditLog {
  private readonly pending = new Set<Promise<void>>()
  private timer: NodeJS.Timeout | null = null

  constructor(private readonly opts: AuditLogOptions) {}

  /**
   * Appends an entry, timed now, in the background; a failure is logged with what was lost (the request is
   * answered already).
   */
  record(change: Omit<NewAuditRecord, 'at'>): void {
    const entry = { at: this.opts.clock.now(), ...change }
    const p = this.opts.store.audit.append(entry).then(
      () => undefined,
      (err: Error) =>
        this.opts.log.error(
          { err: err.message, action: entry.action, resourceId: entry.resourceId, actor: entry.actor.id },
          'audit entry not written',
        ),
    )
    this.pending.add(p)
    void p.finally(() => this.pending.delete(p))
  }

  /** Waits for the entries being written (tests read the log right after a request; stop waits too). */
  async flush(): Promise<void> {
    await Promise.all([...this.pending])
  }

  /** One page of the entries `caller` may see, newest first. */
  async page(caller: Principal, q: AuditQuery): Promise<AuditPage> {
    await this.flush()
    const limit = q.limit ?? 100
    const rows = await this.opts.store.audit.query({ ...(await this.scope(caller, q)), limit: limit + 1 })
    const entries = rows.slice(0, limit).map(entryOf)
    return { entries, nextCursor: rows.length > limit ? entries[entries.length - 1].id : null }
  }

  /** Every entry `caller` may see that matches, newest first (from `cursor` on), read a page at a time. */
  async *export(caller: Principal, q: AuditQuery): AsyncGenerator<AuditEntry> {
    await this.flush()
    const scope = await this.scope(caller, q)
    for (;;) {
      const rows = await this.opts.store.audit.query({ ...scope, limit: EXPORT_PAGE })
      for (const r of rows) yield entryOf(r)
      if (rows.length < EXPORT_PAGE) return
      scope.beforeSeq = rows[rows.length - 1].seq
    }
  }

  /** Deletes the entries past their retention now; returns how many went. */
  async prune(): Promise<number> {
    if (this.opts.retentionDays <= 0) return 0
    return this.opts.store.audit.prune(this.opts.clock.now() - this.opts.retentionDays * DAY_MS)
  }

  /** Starts deleting old entries (at once, then periodically). */
  start(): void {
    const run = () =>
      void this.prune().then(
        (n) =>
          n > 0 &&
          this.opts.log.info(
            { deleted: n, retentionDays: this.opts.retentionDays },
            'audit entries past retention deleted',
          ),
        (err: Error) =>
          this.opts.log.warn({ err: err.message }, 'deleting old audit entries failed; tried again later'),
      )
    run()
    this.timer = setInterval(run, this.opts.pruneEveryMs ?? 3_600_000).unref()
  }

  /** Stops the retention timer and waits for entries still being written (before the store closes). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    await this.flush()
  }

  private async scope(caller: Principal, q: AuditQuery): Promise<Omit<StoreQuery, 'limit'>> {
    if (q.account !== undefined && !caller.admin)
      throw new DomainError('forbidden', 'only the admin may read the audit log of another account (`account`)')
    // The admin names an account by id or name; one that does not exist (any more) is taken as an id, whose
    // entries outlive it.
    const account =
      q.account === undefined ? undefined : ((await this.opts.store.accounts.getByName(q.account))?.id ?? q.account)
    const time = (field: 'since' | 'until') => (q[field] === undefined ? undefined : Date.parse(q[field]))
    return {
      accountId: caller.admin ? account : caller.accountId,
      actorId: q.actor,
      action: q.action,
      resourceType: q.resourceType,
      resourceId: q.resourceId,
      since: time('since'),
      until: time('until'),
      beforeSeq: q.cursor === undefined ? undefined : Number(q.cursor),
    }
  }
}

function entryOf(r: AuditRecord): AuditEntry {
  return {
    id: String(r.seq),
    at: iso(r.at),
    actor: r.actor,
    action: r.action,
    resourceType: r.resourceType,
    resourceId: r.resourceId,
    outcome: r.outcome,
    status: r.status,
    ip: r.ip,
    requestId: r.requestId,
  }
}
