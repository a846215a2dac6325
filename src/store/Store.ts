/*
 * How to add a collection (pods, clusters, billing, ...):
 *  1. Write its port in `src/store/<Name>Store.ts`: a record type of plain data (derive it from the
 *     `contract/` schema with Static<> where the resource has one, plus what only the server keeps, such as
 *     `accountId`), and an interface of async methods that speak in those records. No driver type (Database,
 *     PoolClient, rows) ever appears in a port; times are epoch ms or ISO strings as the record says.
 *     A resource owned by an account can simply extend `OwnedCollection<Record>` (src/store/OwnedCollection.ts).
 *  2. Add it to `Store` below, so it is reachable both from the store and from a transaction handle.
 *  3. SQLite adapter: a numbered migration in `src/store/sqlite/migrations` (your team range) and a class in
 *     `src/store/sqlite/` (an owned JSON resource needs only `new SqliteDocuments(db, gate, '<kind>')`).
 *  4. PostgreSQL adapter: the same migration number in `src/store/postgres/migrations` and a class in
 *     `src/store/postgres/` taking a `PgQueryable` (pool or transaction client), so it works inside
 *     `transaction()` unchanged.
 *  5. Cases in the contract suite `test/contracts/store.ts`; both adapters must pass them
 *     (`npx vitest run test/store.sqlite.test.ts test/store.postgres.test.ts`).
 *  "In use, refuse delete" rules between collections live in `src/services/inUse.ts`, not in each service.
 */
import type { AccountStore, ApiKeyStore } from './AccountStore.js'
import type { DelegationStore, RegistryStore } from './RegistryStore.js'
import type { EndpointStore, ReleaseStore } from './EndpointStore.js'
import type { JobStore } from './JobStore.js'
import type { MetricStore } from './MetricStore.js'
import type { NetworkVolumeStore } from './NetworkVolumeStore.js'
import type { PodStore } from './PodStore.js'
import type { QuotaStore } from './QuotaStore.js'
import type { ClusterStore } from './ClusterStore.js'
import type { SshKeyStore } from './SshKeyStore.js'
import type { TemplateStore } from './TemplateStore.js'
import type { UsageStore } from './UsageStore.js'
import type { WebhookStore } from './WebhookStore.js'
import type { WebhookSecretStore } from './WebhookSecretStore.js'
import type { WorkerStore } from './WorkerStore.js'
import type { AuditStore } from './AuditStore.js'
import type { SecretStore } from './SecretStore.js'
import type { MemberStore } from './MemberStore.js'

export type { AccountRecord, AccountStore, ApiKeyRecord, ApiKeyStore } from './AccountStore.js'
export type { Owned, OwnedCollection } from './OwnedCollection.js'

/** The collections, as seen from the store or from inside a transaction. */
export interface Collections {
  readonly accounts: AccountStore
  readonly apiKeys: ApiKeyStore
  readonly templates: TemplateStore
  readonly registries: RegistryStore
  readonly delegations: DelegationStore
  readonly networkVolumes: NetworkVolumeStore
  readonly endpoints: EndpointStore
  readonly releases: ReleaseStore
  readonly sshKeys: SshKeyStore
  readonly jobs: JobStore
  readonly workers: WorkerStore
  readonly webhooks: WebhookStore
  /** Signing secrets of endpoints' webhooks. */
  readonly webhookSecrets: WebhookSecretStore
  /** Accounts' secrets, their values sealed (referenced from env as `{{ RUNPOD_SECRET_<name> }}`). */
  readonly secrets: SecretStore
  readonly pods: PodStore
  readonly clusters: ClusterStore
  /** The usage ledger (billing). */
  readonly usage: UsageStore
  /** Quotas and fair-share settings of accounts. */
  readonly quotas: QuotaStore
  /** Members of accounts with their roles, sessions, own keys and invitations. */
  readonly members: MemberStore
}

/**
 * The storage port. Services see only these interfaces and plain records; no driver type crosses it, so
 * the SQLite and PostgreSQL adapters stand side by side. Every method is async for that reason.
 */
export interface Store extends Collections {
  /**
   * Runs `fn` with a handle whose reads and writes form one transaction: all its writes land or none
   * (when `fn` throws, the error is rethrown after the rollback). Use the handle, not the store, inside
   * `fn`: on a connection pool the store's own methods run on other connections, outside the transaction.
   * Transactions do not nest. Keep `fn` to store calls (no network waits): it holds a connection, and on
   * SQLite it holds the only writer.
   */
  transaction<T>(fn: (tx: Collections) => Promise<T>): Promise<T>
  /** Endpoint metrics in time buckets (outside transactions: each replica flushes its own rows). */
  readonly metrics: MetricStore
  /** The audit log (outside transactions: an entry is appended once the change it records is answered). */
  readonly audit: AuditStore
  /** Which adapter this is, for logs and `hangar migrate` output. */
  readonly dialect: 'sqlite' | 'postgres'
  close(): Promise<void>
}
