import Database from 'better-sqlite3'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import type { AccountStore, ApiKeyStore } from '../AccountStore.js'
import type { EndpointStore, ReleaseStore } from '../EndpointStore.js'
import type { NetworkVolumeStore } from '../NetworkVolumeStore.js'
import type { PodStore } from '../PodStore.js'
import type { ClusterRecord, ClusterStore } from '../ClusterStore.js'
import type { WebhookSecretRecord, WebhookSecretStore } from '../WebhookSecretStore.js'
import type { DelegationRecord, DelegationStore, RegistryRecord, RegistryStore } from '../RegistryStore.js'
import type { SshKeyStore } from '../SshKeyStore.js'
import type { Collections, Store } from '../Store.js'
import type { TemplateStore } from '../TemplateStore.js'
import type { UsageStore } from '../UsageStore.js'
import type { WebhookStore } from '../WebhookStore.js'
import type { WorkerStore } from '../WorkerStore.js'
import { Checkpointer } from './Checkpointer.js'
import { migrate } from './migrate.js'
import { SqliteMemberStore } from './SqliteMemberStore.js'
import type { MemberStore } from '../MemberStore.js'
import { SqliteQuotaStore } from './SqliteQuotaStore.js'
import type { QuotaStore } from '../QuotaStore.js'
import { SqliteAccountStore, SqliteApiKeyStore } from './SqliteAccountStore.js'
import { SqliteEndpointStore, SqliteReleaseStore, SqliteSshKeyStore, SqliteTemplateStore } from './SqliteCollections.js'
import { SqliteDocuments } from './SqliteDocuments.js'
import { SqliteJobStore } from './SqliteJobStore.js'
import { SqlitePodStore } from './SqlitePodStore.js'
import { SqliteMetricStore } from './SqliteMetricStore.js'
import type { MetricStore } from '../MetricStore.js'
import { SqliteUsageStore } from './SqliteUsageStore.js'
import type { NetworkVolumeRecord } from '../NetworkVolumeStore.js'
import { SqliteWebhookStore } from './SqliteWebhookStore.js'
import { SqliteWorkerStore } from './SqliteWorkerStore.js'
import { TxGate } from './TxGate.js'
import type { AuditStore } from '../AuditStore.js'
import type { SecretRecord, SecretStore } from '../SecretStore.js'
import { SqliteAuditStore } from './SqliteAuditStore.js'

/** The embedded default store: one SQLite file in WAL mode. */
export class SqliteStore implements Store {
  readonly dialect = 'sqlite'
  readonly accounts: AccountStore
  readonly apiKeys: ApiKeyStore
  readonly templates: TemplateStore
  readonly registries: RegistryStore
  readonly delegations: DelegationStore
  readonly networkVolumes: NetworkVolumeStore
  readonly endpoints: EndpointStore
  readonly releases: ReleaseStore
  readonly sshKeys: SshKeyStore
  readonly jobs: SqliteJobStore
  readonly workers: WorkerStore
  readonly webhooks: WebhookStore
  readonly pods: PodStore
  readonly clusters: ClusterStore
  readonly webhookSecrets: WebhookSecretStore
  readonly secrets: SecretStore
  readonly audit: AuditStore
  readonly usage: UsageStore
  readonly quotas: QuotaStore
  readonly members: MemberStore
  readonly metrics: MetricStore
  private readonly db: Database.Database
  private readonly checkpointer: Checkpointer | null
  private readonly gate = new TxGate()
  /** The same collections without the gate, handed to `transaction`'s callback. */
  private readonly tx: Collections
  /** The endpoint documents, kept parsed in memory (dropped when a transaction rolls back). */
  private readonly endpointDocs: SqliteEndpointStore

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
    const db = this.db
    const webhooks = new SqliteWebhookStore(db)
    this.jobs = new SqliteJobStore(db, webhooks, this.gate)
    this.endpointDocs = new SqliteEndpointStore(db)
    this.tx = {
      accounts: new SqliteAccountStore(db),
      apiKeys: new SqliteApiKeyStore(db),
      templates: new SqliteTemplateStore(db),
      registries: new SqliteDocuments<RegistryRecord>(db, 'registry'),
      delegations: new SqliteDocuments<DelegationRecord>(db, 'delegation'),
      networkVolumes: new SqliteDocuments<NetworkVolumeRecord>(db, 'network_volume'),
      endpoints: this.endpointDocs,
      releases: new SqliteReleaseStore(db),
      sshKeys: new SqliteSshKeyStore(db),
      jobs: this.jobs.inTransaction(),
      workers: new SqliteWorkerStore(db),
      webhooks,
      pods: new SqlitePodStore(db),
      clusters: new SqliteDocuments<ClusterRecord>(db, 'cluster'),
      webhookSecrets: new SqliteDocuments<WebhookSecretRecord>(db, 'webhook_secret'),
      secrets: new SqliteDocuments<SecretRecord>(db, 'secret'),
      usage: new SqliteUsageStore(db),
      quotas: new SqliteQuotaStore(db),
      members: new SqliteMemberStore(db),
    }
    const g = <T extends object>(c: T) => this.gate.guard(c)
    this.accounts = g(this.tx.accounts)
    this.apiKeys = g(this.tx.apiKeys)
    this.templates = g(this.tx.templates)
    this.registries = g(this.tx.registries)
    this.delegations = g(this.tx.delegations)
    this.networkVolumes = g(this.tx.networkVolumes)
    this.endpoints = g(this.tx.endpoints)
    this.releases = g(this.tx.releases)
    this.sshKeys = g(this.tx.sshKeys)
    this.workers = g(this.tx.workers)
    this.webhooks = g(webhooks)
    this.pods = g(this.tx.pods)
    this.clusters = g(this.tx.clusters)
    this.webhookSecrets = g(this.tx.webhookSecrets)
    this.secrets = g(this.tx.secrets)
    this.audit = g(new SqliteAuditStore(db))
    this.usage = g(this.tx.usage)
    this.quotas = g(this.tx.quotas)
    this.members = g(this.tx.members)
    this.metrics = g(new SqliteMetricStore(db))
  }

  transaction<T>(fn: (tx: Collections) => Promise<T>): Promise<T> {
    // better-sqlite3 transactions are synchronous; an async callback is bracketed by hand, and the gate
    // keeps everything else off the connection until it ends.
    return this.gate.run(async () => {
      this.db.exec('BEGIN IMMEDIATE')
      this.jobs.transactionBegins()
      try {
        const result = await fn(this.tx)
        this.db.exec('COMMIT')
        return result
      } catch (err) {
        if (this.db.inTransaction) this.db.exec('ROLLBACK')
        // Job counts and cached endpoints may have followed writes that are now undone: by this ROLLBACK, or
        // by SQLite itself (an I/O error, a full disk or an interrupt ends the transaction on its own). The
        // counts are rebuilt only when jobs were written: a refused PATCH must not scan a million jobs.
        this.jobs.transactionRolledBack()
        this.endpointDocs.forgetCached()
        throw err
      }
    })
  }

  async close(): Promise<void> {
    if (!this.db.open) return
    await this.gate.wait()
    await this.checkpointer?.stop()
    if (!this.db.open) return
    // Job writes waiting for their group commit go in before the file closes.
    this.jobs.flush()
    this.db.close()
  }
}
