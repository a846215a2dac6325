import type { JobStore } from './JobStore.js'
import type { WebhookStore } from './WebhookStore.js'
import type { WorkerStore } from './WorkerStore.js'

/**
 * The storage port. Services see only these interfaces and plain records; no driver type crosses it, so a
 * PostgreSQL adapter can stand beside the SQLite one. Every method is async for that reason.
 */
export interface Store {
  readonly accounts: AccountStore
  readonly apiKeys: ApiKeyStore
  readonly templates: DocumentStore<OwnedDocument & { public: boolean }>
  readonly registries: DocumentStore<OwnedDocument>
  readonly networkVolumes: DocumentStore<OwnedDocument>
  readonly endpoints: DocumentStore<OwnedDocument>
  readonly releases: DocumentStore<OwnedDocument & { endpointId: string }>
  readonly jobs: JobStore
  readonly workers: WorkerStore
  readonly webhooks: WebhookStore
  readonly delegations: DocumentStore<OwnedDocument>
  /** One document per account, whose id is the account id: its registered SSH public keys. */
  readonly sshKeys: DocumentStore<OwnedDocument>
  /** Runs `fn` so that either all its writes land or none. */
  transaction<T>(fn: () => Promise<T>): Promise<T>
  close(): Promise<void>
}

export interface AccountRecord {
  id: string
  name: string
  rateLimitExempt: boolean
  createdAt: string
}

export interface ApiKeyRecord {
  id: string
  accountId: string
  name: string | null
  /** sha256 of the key, hex; the key itself is never stored. */
  hash: string
  prefix: string
  permission: 'ALL' | 'READ_ONLY' | 'RESTRICTED'
  endpointIds: string[]
  admin: boolean
  expiresAt: string | null
  revokedAt: string | null
  lastUsedAt: string | null
  createdAt: string
}

export interface AccountStore {
  insert(account: AccountRecord): Promise<void>
  get(id: string): Promise<AccountRecord | undefined>
  getByName(name: string): Promise<AccountRecord | undefined>
  list(): Promise<AccountRecord[]>
}

export interface ApiKeyStore {
  insert(key: ApiKeyRecord): Promise<void>
  get(id: string): Promise<ApiKeyRecord | undefined>
  findByHash(hash: string): Promise<ApiKeyRecord | undefined>
  list(accountId?: string): Promise<ApiKeyRecord[]>
  revoke(id: string, at: string): Promise<boolean>
  touch(id: string, at: string): Promise<void>
}

/** A resource owned by one account; everything else about it is the adapter's opaque JSON. */
export interface OwnedDocument {
  id: string
  accountId: string
  createdAt: string
}

/**
 * Storage for one kind of owned resource. Reads never filter by account on their own: services check
 * ownership so that foreign and missing resources produce the same answer.
 */
export interface DocumentStore<T extends OwnedDocument> {
  insert(doc: T): Promise<void>
  get(id: string): Promise<T | undefined>
  /** Oldest first. `public: true` lists public documents of every account. */
  list(filter: { accountId?: string; public?: boolean; parentId?: string }): Promise<T[]>
  /** Replaces the stored document; false when it does not exist. */
  update(doc: T): Promise<boolean>
  delete(id: string): Promise<boolean>
}
