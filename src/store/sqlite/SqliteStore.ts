import Database from 'better-sqlite3'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import type { AccountRecord, AccountStore, ApiKeyRecord, ApiKeyStore, DocumentStore, OwnedDocument, Store } from '../Store.js'
import { Checkpointer } from './Checkpointer.js'
import { migrate } from './migrate.js'
import { SqliteJobStore } from './SqliteJobStore.js'
import { SqliteWebhookStore } from './SqliteWebhookStore.js'
import { SqliteWorkerStore } from './SqliteWorkerStore.js'

/** The embedded default store: one SQLite file in WAL mode. */
export class SqliteStore implements Store {
  readonly accounts: AccountStore
  readonly apiKeys: ApiKeyStore
  readonly templates: SqliteDocuments<OwnedDocument & { public: boolean }>
  readonly registries: SqliteDocuments<OwnedDocument>
  readonly networkVolumes: SqliteDocuments<OwnedDocument>
  readonly endpoints: SqliteDocuments<OwnedDocument>
  readonly releases: SqliteDocuments<OwnedDocument & { endpointId: string }>
  readonly jobs: SqliteJobStore
  readonly workers: SqliteWorkerStore
  readonly webhooks: SqliteWebhookStore
  readonly delegations: SqliteDocuments<OwnedDocument>
  readonly sshKeys: SqliteDocuments<OwnedDocument>
  private readonly db: Database.Database
  private readonly checkpointer: Checkpointer | null

  /** Opens (creating if needed) the database file and brings its schema up to date. */
  constructor(file: string) {
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true })
    this.db = new Database(file)
    this.db.pragma('journal_mode = WAL')
    // NORMAL in WAL mode survives a process crash (SIGKILL); only an OS crash can lose the last commits.
    this.db.pragma('synchronous = NORMAL')
    this.db.pragma('foreign_keys = ON')
    this.db.pragma('busy_timeout = 5000')
    migrate(this.db)
    // WAL checkpoints (and their fsyncs) run on a thread of their own; the writer's autocheckpoint stays
    // as a backstop at 10,000 pages (40 MB).
    this.checkpointer = file === ':memory:' ? null : new Checkpointer(file)
    if (this.checkpointer) this.db.pragma('wal_autocheckpoint = 10000')
    this.accounts = new SqliteAccounts(this.db)
    this.apiKeys = new SqliteApiKeys(this.db)
    this.templates = new SqliteDocuments(this.db, 'template')
    this.registries = new SqliteDocuments(this.db, 'registry')
    this.networkVolumes = new SqliteDocuments(this.db, 'network_volume')
    this.endpoints = new SqliteDocuments(this.db, 'endpoint')
    this.releases = new SqliteDocuments(this.db, 'release', (d) => d.endpointId)
    this.webhooks = new SqliteWebhookStore(this.db)
    this.jobs = new SqliteJobStore(this.db, this.webhooks)
    this.workers = new SqliteWorkerStore(this.db)
    this.delegations = new SqliteDocuments(this.db, 'delegation')
    this.sshKeys = new SqliteDocuments(this.db, 'ssh_keys')
  }

  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    // better-sqlite3 transactions are synchronous; an async callback is bracketed by hand. Safe because
    // the adapter's own awaits never yield to other work touching this connection mid-statement.
    this.db.exec('BEGIN IMMEDIATE')
    try {
      const result = await fn()
      this.db.exec('COMMIT')
      return result
    } catch (err) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK')
      throw err
    }
  }

  async close(): Promise<void> {
    if (!this.db.open) return
    await this.checkpointer?.stop()
    if (!this.db.open) return
    // Job writes waiting for their group commit go in before the file closes.
    this.jobs.flush()
    this.db.close()
  }
}

class SqliteAccounts implements AccountStore {
  private readonly byId
  private readonly byName
  private readonly all
  private readonly ins
  constructor(db: Database.Database) {
    this.byId = db.prepare('SELECT * FROM accounts WHERE id = ?')
    this.byName = db.prepare('SELECT * FROM accounts WHERE name = ?')
    this.all = db.prepare('SELECT * FROM accounts ORDER BY created_at, name')
    this.ins = db.prepare('INSERT INTO accounts (id, name, rate_limit_exempt, created_at) VALUES (@id, @name, @rateLimitExempt, @createdAt)')
  }
  async insert(a: AccountRecord) {
    this.ins.run({ ...a, rateLimitExempt: a.rateLimitExempt ? 1 : 0 })
  }
  async get(id: string) {
    return toAccount(this.byId.get(id))
  }
  async getByName(name: string) {
    return toAccount(this.byName.get(name))
  }
  async list() {
    return this.all.all().map((r) => toAccount(r)!)
  }
}

function toAccount(row: unknown): AccountRecord | undefined {
  if (!row) return undefined
  const r = row as Record<string, unknown>
  return { id: r.id as string, name: r.name as string, rateLimitExempt: r.rate_limit_exempt === 1, createdAt: r.created_at as string }
}

class SqliteApiKeys implements ApiKeyStore {
  private readonly stmts
  constructor(db: Database.Database) {
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO api_keys (id, account_id, name, hash, prefix, permission, endpoint_ids, admin, expires_at, revoked_at, last_used_at, created_at)
         VALUES (@id, @accountId, @name, @hash, @prefix, @permission, @endpointIds, @admin, @expiresAt, @revokedAt, @lastUsedAt, @createdAt)`,
      ),
      get: db.prepare('SELECT * FROM api_keys WHERE id = ?'),
      byHash: db.prepare('SELECT * FROM api_keys WHERE hash = ?'),
      all: db.prepare('SELECT * FROM api_keys ORDER BY created_at, id'),
      ofAccount: db.prepare('SELECT * FROM api_keys WHERE account_id = ? ORDER BY created_at, id'),
      revoke: db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),
      touch: db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?'),
    }
  }
  async insert(k: ApiKeyRecord) {
    this.stmts.insert.run({ ...k, endpointIds: JSON.stringify(k.endpointIds), admin: k.admin ? 1 : 0 })
  }
  async get(id: string) {
    return toKey(this.stmts.get.get(id))
  }
  async findByHash(hash: string) {
    return toKey(this.stmts.byHash.get(hash))
  }
  async list(accountId?: string) {
    const rows = accountId ? this.stmts.ofAccount.all(accountId) : this.stmts.all.all()
    return rows.map((r) => toKey(r)!)
  }
  async revoke(id: string, at: string) {
    return this.stmts.revoke.run(at, id).changes > 0
  }
  async touch(id: string, at: string) {
    this.stmts.touch.run(at, id)
  }
}

function toKey(row: unknown): ApiKeyRecord | undefined {
  if (!row) return undefined
  const r = row as Record<string, string | number | null>
  return {
    id: r.id as string,
    accountId: r.account_id as string,
    name: r.name as string | null,
    hash: r.hash as string,
    prefix: r.prefix as string,
    permission: r.permission as ApiKeyRecord['permission'],
    endpointIds: JSON.parse(r.endpoint_ids as string),
    admin: r.admin === 1,
    expiresAt: r.expires_at as string | null,
    revokedAt: r.revoked_at as string | null,
    lastUsedAt: r.last_used_at as string | null,
    createdAt: r.created_at as string,
  }
}

/** One kind of owned JSON document in the shared `documents` table. */
export class SqliteDocuments<T extends OwnedDocument> implements DocumentStore<T> {
  private readonly stmts
  constructor(
    db: Database.Database,
    private readonly kind: string,
    private readonly parentOf: (doc: T) => string | null = () => null,
  ) {
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO documents (kind, id, account_id, parent_id, public, data, created_at, seq)
         VALUES (@kind, @id, @accountId, @parentId, @public, @data, @createdAt, (SELECT coalesce(max(seq), 0) + 1 FROM documents))`,
      ),
      get: db.prepare('SELECT data FROM documents WHERE kind = ? AND id = ?'),
      ofAccount: db.prepare('SELECT data FROM documents WHERE kind = ? AND account_id = ? ORDER BY seq'),
      ofParent: db.prepare('SELECT data FROM documents WHERE kind = ? AND parent_id = ? ORDER BY seq'),
      publicAll: db.prepare('SELECT data FROM documents WHERE kind = ? AND public = 1 ORDER BY seq'),
      all: db.prepare('SELECT data FROM documents WHERE kind = ? ORDER BY seq'),
      update: db.prepare('UPDATE documents SET data = @data, public = @public WHERE kind = @kind AND id = @id'),
      delete: db.prepare('DELETE FROM documents WHERE kind = ? AND id = ?'),
    }
  }
  async insert(doc: T) {
    this.stmts.insert.run({ kind: this.kind, id: doc.id, accountId: doc.accountId, parentId: this.parentOf(doc), public: isPublic(doc), data: JSON.stringify(doc), createdAt: doc.createdAt })
  }
  async get(id: string) {
    const row = this.stmts.get.get(this.kind, id) as { data: string } | undefined
    return row ? (JSON.parse(row.data) as T) : undefined
  }
  async list(filter: { accountId?: string; public?: boolean; parentId?: string }) {
    const rows = (
      filter.parentId !== undefined
        ? this.stmts.ofParent.all(this.kind, filter.parentId)
        : filter.accountId !== undefined
          ? this.stmts.ofAccount.all(this.kind, filter.accountId)
          : filter.public
            ? this.stmts.publicAll.all(this.kind)
            : this.stmts.all.all(this.kind)
    ) as Array<{ data: string }>
    let docs = rows.map((r) => JSON.parse(r.data) as T)
    if (filter.accountId !== undefined && filter.parentId !== undefined) docs = docs.filter((d) => d.accountId === filter.accountId)
    if (filter.public !== undefined && (filter.accountId !== undefined || filter.parentId !== undefined)) docs = docs.filter((d) => (isPublic(d) === 1) === filter.public)
    return docs
  }
  async update(doc: T) {
    return this.stmts.update.run({ kind: this.kind, id: doc.id, data: JSON.stringify(doc), public: isPublic(doc) }).changes > 0
  }
  async delete(id: string) {
    return this.stmts.delete.run(this.kind, id).changes > 0
  }
}

function isPublic(doc: object): number {
  return (doc as { public?: unknown }).public === true ? 1 : 0
}
