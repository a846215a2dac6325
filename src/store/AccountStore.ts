import type { ApiKey } from '../contract/admin.js'

export interface AccountRecord {
  id: string
  name: string
  rateLimitExempt: boolean
  /** ISO 8601. */
  createdAt: string
}

export interface ApiKeyRecord {
  id: string
  accountId: string
  name: string | null
  /** sha256 of the key, hex; the key itself is never stored. */
  hash: string
  prefix: string
  permission: ApiKey['permission']
  endpointIds: string[]
  admin: boolean
  expiresAt: string | null
  revokedAt: string | null
  lastUsedAt: string | null
  createdAt: string
}

/** Accounts; names are unique. */
export interface AccountStore {
  /** Fails when the id or the name exists. */
  insert(account: AccountRecord): Promise<void>
  get(id: string): Promise<AccountRecord | undefined>
  getByName(name: string): Promise<AccountRecord | undefined>
  /** Oldest first. */
  list(): Promise<AccountRecord[]>
}

/** API keys, found by the hash of the presented key. */
export interface ApiKeyStore {
  insert(key: ApiKeyRecord): Promise<void>
  get(id: string): Promise<ApiKeyRecord | undefined>
  findByHash(hash: string): Promise<ApiKeyRecord | undefined>
  /** Oldest first; of one account or of all. */
  list(accountId?: string): Promise<ApiKeyRecord[]>
  /** Sets revokedAt once; false when the key is unknown or already revoked. */
  revoke(id: string, at: string): Promise<boolean>
  touch(id: string, at: string): Promise<void>
}
