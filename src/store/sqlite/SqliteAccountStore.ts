import type Database from 'better-sqlite3'
import type { AccountRecord, AccountStore, ApiKeyRecord, ApiKeyStore } from '../AccountStore.js'

/** Accounts in SQLite. */
export class SqliteAccountStore implements AccountStore {
  private readonly byId
  private readonly byName
  private readonly all
  private readonly ins
  constructor(db: Database.Database) {
    this.byId = db.prepare('SELECT * FROM accounts WHERE id = ?')
    this.byName = db.prepare('SELECT * FROM accounts WHERE name = ?')
    this.all = db.prepare('SELECT * FROM accounts ORDER BY created_at, name')
    this.ins = db.prepare(
      'INSERT INTO accounts (id, name, rate_limit_exempt, created_at) VALUES (@id, @name, @rateLimitExempt, @createdAt)',
    )
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
  return {
    id: r.id as string,
    name: r.name as string,
    rateLimitExempt: r.rate_limit_exempt === 1,
    createdAt: r.created_at as string,
  }
}

/** API keys in SQLite; `endpoint_ids` is a JSON array. */
export class SqliteApiKeyStore implements ApiKeyStore {
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
