import { PgMemberStore } from './PgMemberStore.js'
import type { MemberStore } from '../MemberStore.js'
import { PgQuotaStore } from './PgQuotaStore.js'
import type { QuotaStore } from '../QuotaStore.js'
import type { MetricStore } from '../MetricStore.js'
import { PgMetricStore } from './PgMetricStore.js'
import pg from 'pg'
import type { AccountStore, ApiKeyStore } from '../AccountStore.js'
import type { ClusterRecord, ClusterStore } from '../ClusterStore.js'
import type { WebhookSecretRecord, WebhookSecretStore } from '../WebhookSecretStore.js'
import type { EndpointStore, ReleaseStore } from '../EndpointStore.js'
import type { JobStore } from '../JobStore.js'
import type { NetworkVolumeRecord, NetworkVolumeStore } from '../NetworkVolumeStore.js'
import type { PodStore } from '../PodStore.js'
import type { DelegationRecord, DelegationStore, RegistryRecord, RegistryStore } from '../RegistryStore.js'
import type { SshKeyStore } from '../SshKeyStore.js'
import type { Collections, Store } from '../Store.js'
import type { TemplateStore } from '../TemplateStore.js'
import type { UsageStore } from '../UsageStore.js'
import type { WebhookStore } from '../WebhookStore.js'
import type { WorkerStore } from '../WorkerStore.js'
import { migrate, quoteIdent } from './migrate.js'
import { PgAccountStore, PgApiKeyStore } from './PgAccountStore.js'
import { PgEndpointStore, PgReleaseStore, PgSshKeyStore, PgTemplateStore } from './PgCollections.js'
import { PgDocuments } from './PgDocuments.js'
import { PgGroupCommit } from './PgGroupCommit.js'
import { PgJobStore } from './PgJobStore.js'
import { PgPodStore } from './PgPodStore.js'
import { isRetryable, type PgQueryable } from './PgQueryable.js'
import { PgUsageStore } from './PgUsageStore.js'
import { PgWebhookStore } from './PgWebhookStore.js'
import { PgWorkerStore } from './PgWorkerStore.js'
import type { AuditStore } from '../AuditStore.js'
import type { SecretRecord, SecretStore } from '../SecretStore.js'
import { PgAuditStore } from './PgAuditStore.js'

/** How to reach the database. */
export interface PgStoreOptions {
  /** `postgres://user@host:port/db`; a `?schema=name` parameter names the schema (else `schema`, else `public`). */
  url: string
  /** Schema for every table (created if missing); a `schema` in the URL wins. */
  schema?: string
  /** Connections in the pool (default 10). */
  poolSize?: number
}

/** Times `transaction` runs its callback again after a serialization failure or deadlock. */
const TX_ATTEMPTS = 10
const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

/**
 * BIGINT (epoch ms, counts) and NUMERIC (sums) come back as numbers, not strings: every value stored fits
 * well within 2^53. Per pool, so other pg users in the process keep the driver's defaults.
 */
const TYPES = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === pg.types.builtins.INT8 || oid === pg.types.builtins.NUMERIC) return (v: string) => Number(v)
    return pg.types.getTypeParser(oid, format)
  },
} as pg.CustomTypesConfig

/** The schema a URL or the options name, and the URL without the `schema` parameter (unknown to libpq). */
export function pgTarget(opts: Pick<PgStoreOptions, 'url' | 'schema'>): { url: string; schema: string } {
  const u = new URL(opts.url)
  const schema = u.searchParams.get('schema') ?? opts.schema ?? 'public'
  u.searchParams.delete('schema')
  if (!SCHEMA_NAME.test(schema))
    throw new Error(`database schema "${schema}": use letters, digits and _ (not starting with a digit), at most 63`)
  return { url: u.toString(), schema }
}

/** A pool whose every connection works in `schema` (set at connection start, no extra round trip). */
export function createPool(opts: Pick<PgStoreOptions, 'url' | 'schema' | 'poolSize'>): {
  pool: pg.Pool
  schema: string
} {
  const { url, schema } = pgTarget(opts)
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.poolSize ?? 10,
    types: TYPES,
    options: `-c search_path=${quoteIdent(schema)}`,
  })
  // An idle connection that breaks (server restart) must not crash the process; the pool replaces it.
  pool.on('error', () => {})
  return { pool, schema }
}

/**
 * The store on PostgreSQL: every collection over one `pg.Pool`. Open with `PgStore.open`, which brings the
 * schema up to date first. Reads run on any pooled connection; job writes are group-committed; `transaction`
 * runs SERIALIZABLE on one connection and runs its callback again when PostgreSQL reports a conflict.
 */
export class PgStore implements Store {
  readonly dialect = 'postgres'
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
  readonly pods: PodStore
  readonly clusters: ClusterStore
  readonly webhookSecrets: WebhookSecretStore
  readonly secrets: SecretStore
  readonly audit: AuditStore
  readonly usage: UsageStore
  readonly quotas: QuotaStore
  readonly members: MemberStore
  readonly metrics: MetricStore
  private readonly commits: PgGroupCommit
  private closed = false

  /** Connects, applies pending migrations (see migrate.ts) and returns the store with what was applied. */
  static async open(opts: PgStoreOptions): Promise<PgStore> {
    const { pool, schema } = createPool(opts)
    try {
      const applied = await migrate(pool, schema)
      return new PgStore(pool, schema, applied)
    } catch (err) {
      await pool.end()
      throw err
    }
  }

  private constructor(
    private readonly pool: pg.Pool,
    /** The schema the tables live in. */
    readonly schema: string,
    /** Migration files this open applied (empty when the schema was up to date). */
    readonly applied: string[],
  ) {
    this.commits = new PgGroupCommit(pool)
    const c = collections(pool, this.commits)
    this.accounts = c.accounts
    this.apiKeys = c.apiKeys
    this.templates = c.templates
    this.registries = c.registries
    this.delegations = c.delegations
    this.networkVolumes = c.networkVolumes
    this.endpoints = c.endpoints
    this.releases = c.releases
    this.sshKeys = c.sshKeys
    this.jobs = c.jobs
    this.workers = c.workers
    this.webhooks = c.webhooks
    this.pods = c.pods
    this.clusters = c.clusters
    this.webhookSecrets = c.webhookSecrets
    this.secrets = c.secrets
    this.audit = new PgAuditStore(pool)
    this.usage = c.usage
    this.quotas = c.quotas
    this.members = c.members
    this.metrics = new PgMetricStore(pool)
  }

  async transaction<T>(fn: (tx: Collections) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const client = await this.pool.connect()
      try {
        // SERIALIZABLE: concurrent read-modify-write callbacks behave as if run one after another; the
        // price is a retry when PostgreSQL cannot order them, which the loop pays.
        await client.query('BEGIN ISOLATION LEVEL SERIALIZABLE')
        const result = await fn(collections(client, null))
        await client.query('COMMIT')
        return result
      } catch (err) {
        // A ROLLBACK that fails means the connection broke; the error that matters is the one handled below.
        await client.query('ROLLBACK').catch(() => {})
        if (!isRetryable(err) || attempt >= TX_ATTEMPTS) throw err
      } finally {
        client.release()
      }
      // Jittered backoff so that the conflicting callbacks do not meet again at once.
      await new Promise((r) => setTimeout(r, Math.random() * 5 * attempt))
    }
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    // Job writes waiting for their group commit go in before the pool closes.
    await this.commits.drain()
    await this.pool.end()
  }
}

/** The collections over `q`; job writes group-committed when `commits` is given (not inside a transaction). */
function collections(q: PgQueryable, commits: PgGroupCommit | null): Collections {
  return {
    accounts: new PgAccountStore(q),
    apiKeys: new PgApiKeyStore(q),
    templates: new PgTemplateStore(q),
    registries: new PgDocuments<RegistryRecord>(q, 'registry'),
    delegations: new PgDocuments<DelegationRecord>(q, 'delegation'),
    networkVolumes: new PgDocuments<NetworkVolumeRecord>(q, 'network_volume'),
    endpoints: new PgEndpointStore(q),
    releases: new PgReleaseStore(q),
    sshKeys: new PgSshKeyStore(q),
    jobs: new PgJobStore(q, commits),
    workers: new PgWorkerStore(q),
    webhooks: new PgWebhookStore(q),
    pods: new PgPodStore(q),
    clusters: new PgDocuments<ClusterRecord>(q, 'cluster'),
    webhookSecrets: new PgDocuments<WebhookSecretRecord>(q, 'webhook_secret'),
    secrets: new PgDocuments<SecretRecord>(q, 'secret'),
    usage: new PgUsageStore(q),
    quotas: new PgQuotaStore(q),
    members: new PgMemberStore(q),
  }
}
