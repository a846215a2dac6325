import type { AccountRecord, AccountStore, ApiKeyRecord, ApiKeyStore } from '../AccountStore.js'
import type { PgQueryable } from './PgQueryable.js'

type Row = Record<string, unknown>

/** Accounts in PostgreSQL. */
export class PgAccountStore implements AccountStore {
  constructor(private readonly q: PgQueryable) {}
  async insert(a: AccountRecord): Promise<void> {
    await this.q.query('INSERT INTO accounts (id, name, rate_limit_exempt, created_at) VALUES ($1, $2, $3, $4)', [
      a.id,
      a.name,
      a.rateLimitExempt,
      a.createdAt,
    ])
  }
  async get(id: string): Promise<AccountRecord | undefined> {
    return toAccount((await this.q.query('SELECT * FROM accounts WHERE id = $1', [id])).rows[0])
  }
  async getByName(name: string): Promise<AccountRecord | undefined> {
    return toAccount((await this.q.query('SELECT * FROM accounts WHERE name = $1', [name])).rows[0])
  }
  async list(): Promise<AccountRecord[]> {
    return (await this.q.query('SELECT * FROM accounts ORDER BY created_at, name')).rows.map((r) => toAccount(r)!)
  }
}

function toAccount(r: Row | undefined): AccountRecord | undefined {
  if (!r) return undefined
  return {
    id: r.id as string,
    name: r.name as string,
    rateLimitExempt: r.rate_limit_exempt === true,
    createdAt: r.created_at as string,
  }
}

/** API keys in PostgreSQL; `endpoint_ids` is a JSON array as text. */
export class PgApiKeyStore implements ApiKeyStore {
  constructor(private readonly q: PgQueryable) {}
  async insert(k: ApiKeyRecord): Promise<void> {
    await this.q.query(
      `INSERT INTO api_keys (id, account_id, name, hash, prefix, permission, endpoint_ids, admin, expires_at, revoked_at, last_used_at, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
      [
        k.id,
        k.accountId,
        k.name,
        k.hash,
        k.prefix,
        k.permission,
        JSON.stringify(k.endpointIds),
        k.admin,
        k.expiresAt,
        k.revokedAt,
        k.lastUsedAt,
        k.createdAt,
      ],
    )
  }
  async get(id: string): Promise<ApiKeyRecord | undefined> {
    return toKey((await this.q.query('SELECT * FROM api_keys WHERE id = $1', [id])).rows[0])
  }
  async findByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    return toKey((await this.q.query('SELECT * FROM api_keys WHERE hash = $1', [hash])).rows[0])
  }
  async list(accountId?: string): Promise<ApiKeyRecord[]> {
    const r =
      accountId === undefined
        ? await this.q.query('SELECT * FROM api_keys ORDER BY created_at, id')
        : await this.q.query('SELECT * FROM api_keys WHERE account_id = $1 ORDER BY created_at, id', [accountId])
    return r.rows.map((row) => toKey(row)!)
  }
  async revoke(id: string, at: string): Promise<boolean> {
    return (
      ((await this.q.query('UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [at, id]))
        .rowCount ?? 0) > 0
    )
  }
  async touch(id: string, at: string): Promise<void> {
    await this.q.query('UPDATE api_keys SET last_used_at = $1 WHERE id = $2', [at, id])
  }
}

function toKey(r: Row | undefined): ApiKeyRecord | undefined {
  if (!r) return undefined
  return {
    id: r.id as string,
    accountId: r.account_id as string,
    name: r.name as string | null,
    hash: r.hash as string,
    prefix: r.prefix as string,
    permission: r.permission as ApiKeyRecord['permission'],
    endpointIds: JSON.parse(r.endpoint_ids as string) as string[],
    admin: r.admin === true,
    expiresAt: r.expires_at as string | null,
    revokedAt: r.revoked_at as string | null,
    lastUsedAt: r.last_used_at as string | null,
    createdAt: r.created_at as string,
  }
}
