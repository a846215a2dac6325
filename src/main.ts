import { chmodSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type pino from 'pino'
import { buildApp, type App } from './api/app.js'
import { DataDirLock } from './DataDirLock.js'
import { createLogger } from './logger.js'
import { type TrackedConnections, trackConnections } from './api/drain.js'
import { CatalogService, localHosts } from './catalog/CatalogService.js'
import { Fleet } from './catalog/Fleet.js'
import { detectMachine } from './catalog/detect.js'
import { publicBaseUrl, workerHostEnv, type Config } from './config.js'
import { systemClock, type Clock } from './domain/clock.js'
import type { CounterStore } from './ratelimit/CounterStore.js'
import { MemoryCounterStore } from './ratelimit/MemoryCounterStore.js'
import { RateLimiter } from './ratelimit/RateLimiter.js'
import { RedisCounterStore } from './ratelimit/RedisCounterStore.js'
import { AccountService, ADMIN_ACCOUNT } from './services/accounts/AccountService.js'
import { BillingService } from './services/billing/BillingService.js'
import { UsageMeter } from './services/billing/UsageMeter.js'
import { podUsage, volumeUsage } from './services/billing/usageSubjects.js'
import { PriceBook } from './domain/billing/PriceBook.js'
import { NetworkVolumeService } from './services/storage/NetworkVolumeService.js'
import { RegistryService } from './services/storage/RegistryService.js'
import { SecretBox } from './services/SecretBox.js'
import { SignInThrottle } from './services/accounts/SignInThrottle.js'
import { checkOidcConfig, OidcSignIn } from './services/accounts/OidcSignIn.js'
import { SecretService } from './services/secrets/SecretService.js'
import { withSecretEnv } from './services/secrets/withSecretEnv.js'
import { AuditLog } from './services/audit/AuditLog.js'
import { WebhookSecrets } from './services/jobs/WebhookSecrets.js'
import { SshKeyService } from './services/accounts/SshKeyService.js'
import { TemplateService } from './services/endpoints/TemplateService.js'
import { EndpointService } from './services/endpoints/EndpointService.js'
import { Autoscaler } from './services/workers/autoscaler/Autoscaler.js'
import { JobEvents } from './services/jobs/JobEvents.js'
import { JobLifecycle } from './services/jobs/JobLifecycle.js'
import { JobService, type WorkerHealth } from './services/jobs/JobService.js'
import { JobSweeper } from './services/jobs/JobSweeper.js'
import { OpenAiService } from './services/jobs/OpenAiService.js'
import { HealthPoller } from './services/loadBalancer/HealthPoller.js'
import { LoadBalancer } from './services/loadBalancer/LoadBalancer.js'
import { silentLog, type Log } from './services/log.js'
import { WebhookDispatcher } from './services/jobs/WebhookDispatcher.js'
import { WorkerJobService } from './services/jobs/WorkerJobService.js'
import { DroppedTakes } from './services/jobs/DroppedTakes.js'
import { WorkerService } from './services/workers/WorkerService.js'
import { buildRuntime, hostEngines } from './runtime/buildRuntime.js'
import { HostRuntimes } from './runtime/HostRuntimes.js'
import type { RuntimeDriver } from './runtime/RuntimeDriver.js'
import { probeCgroups } from './runtime/process/cgroups.js'
import { probeSandbox } from './runtime/process/sandbox.js'
import { openKubernetes } from './runtime/kubernetes/openKubernetes.js'
import { HostMonitor } from './services/workers/HostMonitor.js'
import { PodEvents } from './services/pods/PodEvents.js'
import { PodService } from './services/pods/PodService.js'
import { PodLinks } from './services/pods/PodLinks.js'
import { ClusterService } from './services/pods/ClusterService.js'
import { PromMetrics } from './metrics/PromMetrics.js'
import { EndpointMetricsRecorder } from './services/endpoints/EndpointMetricsRecorder.js'
import { allMetrics } from './services/Metrics.js'
import { openStore } from './store/openStore.js'
import { pgTarget } from './store/postgres/PgStore.js'
import { clusterFor } from './replicas/clusterFor.js'
import { installationId } from './installationId.js'
import { pullAuth } from './services/storage/pullAuth.js'
import type { Store } from './store/Store.js'
import { QuotaService } from './services/accounts/QuotaService.js'
import { spendEnforcer } from './services/accounts/spendEnforcer.js'

/** The web console's build output: dist/console beside both src/ and dist/ (vite writes it, see console/). */
const CONSOLE_DIR = fileURLToPath(new URL('../dist/console', import.meta.url))
/** The manual: docs/ beside both src/ and dist/ (in the package too, see package.json "files"). */
const DOCS_DIR = fileURLToPath(new URL('../docs', import.meta.url))

/** A running control plane. */
export interface Hangar {
  /** Base URL clients use. */
  readonly url: string
  /** The admin key when this start created it (first start), else null. */
  readonly adminKey: string | null
  /** Where a generated admin key was written, or null when it came from HANGAR_ADMIN_API_KEY. */
  readonly adminKeyFile: string | null
  readonly app: App
  readonly store: Store
  readonly catalog: CatalogService
  readonly jobs: JobService
  readonly workers: WorkerService
  /** Deadline checks; `sweep()` runs one now (tests move their clock, then sweep). */
  readonly sweeper: JobSweeper
  /** Scaling decisions; `poke()` resolves after one that started after the call (tests move their monotonic clock, then poke). */
  readonly scaler: Autoscaler
  /** Engine pings; `check()` runs one round now. */
  readonly hostMonitor: HostMonitor
  readonly webhooks: WebhookDispatcher
  readonly pods: PodService
  /** Pod lifecycle transitions (billing meters pods from these). */
  readonly podEvents: PodEvents
  /** Writes the usage ledger; `flush()` waits for what is queued (tests read billing after it). */
  readonly meter: UsageMeter
  readonly billing: BillingService
  /** Quotas and spend limits; `check()` sums spend and re-reads quotas now (tests wait for it). */
  readonly quotas: QuotaService
  /** Endpoint metrics buckets; `flush()` writes what this process counted (tests read the store after it). */
  readonly endpointMetrics: EndpointMetricsRecorder
  /** Stops accepting requests, finishes those in flight, then closes the store. */
  stop(): Promise<void>
}

export interface StartOptions {
  /** Business time: job deadlines, TTLs, billing, rate windows (tests move a ManualClock instead of sleeping). */
  clock?: Clock
  /**
   * Monotonic ms of the worker service and the autoscaler: heartbeats, idle timeouts, FlashBoot windows,
   * crash back-off, the scaler's demand history (tests move it, then await `scaler.poke()`). The load
   * balancer and the health checks keep real time: they pace requests and probes on the network.
   */
  monotonic?: () => number
  /** Overrides the pino logger built from config.logLevel (tests pass false). */
  logger?: pino.Logger | false
  /** Adds routes or hooks before the server listens (embedders, and tests of error handling). */
  configureApp?: (app: App) => void | Promise<void>
  /** Pod transitions go here (a caller that meters pods subscribes before the restart's recovery). */
  podEvents?: PodEvents
  /**
   * Replaces the runtime built from the configuration, given it (tests wrap it to slow a call down; the fleet
   * bench runs virtual workers instead). The returned driver serves every host; its refs start with its name.
   */
  runtime?: (built: RuntimeDriver) => RuntimeDriver
}

/**
 * The composition root: config -> store -> services -> api, then listen. Each phase builds on the ones before
 * it and hands on what it built by name; the leader's loops start only once the server listens (leaderRole),
 * and `stop` undoes it all in the reverse order (stopInOrder).
 */
export async function startHangar(config: Config, opts: StartOptions = {}): Promise<Hangar> {
  // Settings no sign-in could work with stop the start before anything is opened (the store, the data dir's lock).
  if (config.members.oidc) checkOidcConfig(config.members.oidc)
  const opened = await openStoreAndFeed(config, opts)
  const resources = await buildCatalogAndSecrets(config, opened)
  // Known once the server listens (port 0): the parts given them read them when called, not when built.
  const addresses: Addresses = { url: '', workerUrl: initialWorkerUrl(config), internalUrl: '' }
  // Built after the metrics (which the workers report to), and read by them only when scraped or sampled.
  const late: Late = {}
  const jobs = buildJobs(config, { opened, resources, late })
  const fleet = buildWorkersAndRuntime(config, opts, { opened, resources, jobs, addresses })
  const services = buildServices(config, opts, { opened, resources, jobs, fleet, addresses })
  late.workers = fleet.workers
  late.pods = services.pods
  const role = await leaderRole({ opened, resources, jobs, fleet, services })
  return listen(config, opts, { opened, resources, jobs, fleet, services, role, addresses })
}

/** This server's addresses, final once it listens (before that, from the config where its port is fixed). */
interface Addresses {
  /** Base URL clients use, for links in responses. */
  url: string
  /** Where workers call the control plane, unless their host's engine or cluster says otherwise. */
  workerUrl: string
  /** Where the other replicas forward what needs the leader. */
  internalUrl: string
}

/** Parts the metrics read (when scraped or sampled) that are built after them. */
interface Late {
  workers?: WorkerService
  pods?: PodService
}

type Opened = Awaited<ReturnType<typeof openStoreAndFeed>>
type Resources = Awaited<ReturnType<typeof buildCatalogAndSecrets>>
type Jobs = ReturnType<typeof buildJobs>
type FleetParts = ReturnType<typeof buildWorkersAndRuntime>
type Services = ReturnType<typeof buildServices>
type Role = Awaited<ReturnType<typeof leaderRole>>

/**
 * Phase 1, what everything else writes to or listens on: the store, and the leadership and change feed of the
 * replicas. The sandbox is probed first, so that a required one that cannot run stops the start before anything
 * is opened; the data dir is locked before the store opens, and a store that cannot open unlocks it again.
 */
async function openStoreAndFeed(config: Config, opts: StartOptions) {
  const clock = opts.clock ?? systemClock
  const sandbox = probeSandbox(config.runtime.process)
  if (sandbox.kind === 'none' && config.runtime.process.sandbox === 'bwrap')
    throw new Error(`runtime.process.sandbox is "bwrap" but the sandbox cannot run: ${sandbox.reason}`)
  const logger =
    opts.logger ?? (config.logLevel === 'silent' ? false : await createLogger(config.logLevel, config.logFormat))
  // Only this user may read the data dir (keys, sealed secrets, jobs' input and output).
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 })
  chmodSync(config.dataDir, 0o700)
  // One server per data dir on SQLite: a second would run its own autoscaler over the same database. On
  // PostgreSQL, replicas elect one leader and may share a data dir (secret key, installation id, workers' logs).
  const lock = config.lockDataDir && !config.databaseUrl ? DataDirLock.acquire(config.dataDir) : null

  const store = await openStore(config, config.dataDir).catch((err: unknown) => {
    // A store that cannot open (PostgreSQL down, a damaged file) leaves the data dir free for the next try.
    lock?.release()
    throw err
  })
  const log: Log = logger || silentLog
  // One process on SQLite; with PostgreSQL, any number of them: one leads (runs the loops, owns workers and
  // pods), all serve the API, and they wake each other through the change feed.
  const target = config.databaseUrl ? pgTarget({ url: config.databaseUrl, schema: config.databaseSchema }) : null
  const { leadership, feed } = clusterFor(
    target
      ? { dialect: 'postgres', connectionString: target.url, namespace: target.schema, log }
      : { dialect: 'sqlite' },
  )
  await feed.start()
  const accounts = new AccountService({ store, clock, feed })
  return { clock, sandbox, logger, log, lock, store, leadership, feed, accounts }
}

/**
 * Phase 2, what the fleet offers and what it costs, and the key that seals secrets. A Kubernetes cluster
 * replaces this machine in the fleet (configured hosts stay): its Nodes, by GPU label.
 */
async function buildCatalogAndSecrets(config: Config, { store, clock, log }: Opened) {
  const machine = await detectMachine(config.fleet.detectGpus)
  const kube = config.runtime?.kubernetes
    ? await openKubernetes(config.runtime.kubernetes, config.dataDir, config.fleet.localDataCenterId, log)
    : null
  const catalog = new CatalogService(
    config.catalog,
    config.fleet,
    machine,
    kube ? new Fleet([...(config.fleet.hosts ? localHosts(config.fleet, machine) : []), ...kube.hosts]) : undefined,
  )
  const kubeRefresh = kube ? refreshKubeCapacity(kube, config.runtime!.kubernetes!.capacityRefreshMs, log) : null
  // Registry credentials and jobs' S3 secrets are sealed with a key kept beside (not inside) the database.
  const secrets = SecretBox.open(join(config.dataDir, 'secret.key'))
  const registries = new RegistryService({ store, clock, secrets })
  // Accounts' secrets, sealed with the same key; the audit log of changes made through the API.
  const secretService = new SecretService({ store, clock, box: secrets })
  const audit = new AuditLog({ store, clock, log, retentionDays: config.audit.retentionDays })
  const templates = new TemplateService({ store, clock, registries })
  // Billing: prices from the catalog (GPU, CPU) and the config (storage); the meter writes the ledger.
  const prices = new PriceBook(
    { gpu: (id) => catalog.gpuType(id)?.price, cpu: (id) => catalog.cpuFlavor(id)?.price },
    config.billing.prices,
  )
  const meter = new UsageMeter({ store, clock, prices, log, checkpointMs: config.billing.checkpointMs })
  const billing = new BillingService({ store, clock })
  // Counted in the fleet ledger, where placement is decided (the leader): see QuotaService.
  const quotas = new QuotaService({
    store,
    clock,
    fleet: catalog.fleet,
    log,
    checkIntervalMs: config.quotas.checkIntervalMs,
  })
  const networkVolumes = new NetworkVolumeService({
    store,
    clock,
    catalog,
    volumesDir: join(config.dataDir, 'volumes'),
    meter,
    quotas,
  })
  const sshKeys = new SshKeyService({ store, clock })
  return {
    kube,
    catalog,
    kubeRefresh,
    secrets,
    secretService,
    audit,
    registries,
    templates,
    prices,
    meter,
    billing,
    networkVolumes,
    sshKeys,
    quotas,
  }
}

/**
 * Re-reads a cluster's Nodes on an interval. A refresh that fails keeps the capacity last read; said once when
 * refreshes start failing and once when one works again, not at every interval.
 */
function refreshKubeCapacity(kube: { refresh(): Promise<unknown> }, intervalMs: number, log: Log): NodeJS.Timeout {
  let failing = false
  const refreshed = () => {
    if (failing) log.info({ intervalMs }, 'the Kubernetes capacity is read again')
    failing = false
  }
  const failed = (err: unknown) => {
    if (!failing)
      log.warn(
        { err: err instanceof Error ? err.message : String(err), intervalMs },
        'cannot read the Kubernetes capacity (Nodes): keeping the last read, trying again at each interval',
      )
    failing = true
  }
  return setInterval(() => void kube.refresh().then(refreshed, failed), intervalMs).unref()
}

/**
 * Phase 3, jobs: the lifecycle is the only writer of job states; events wake waiting requests. The metrics come
 * first, as the webhooks, the lifecycle and (next phase) the workers report to them.
 */
function buildJobs(config: Config, p: { opened: Opened; resources: Resources; late: Late }) {
  const { store, clock, log, leadership, feed } = p.opened
  const { late } = p
  // Gauges are read when scraped: job tallies of every endpoint, and (next phase) workers by the status users see.
  const metrics = new PromMetrics({
    now: () => clock.now(),
    jobCounts: async () =>
      Promise.all(
        (await store.endpoints.listAll()).map(async (e) => ({ endpointId: e.id, ...(await store.jobs.counts(e.id)) })),
      ),
    endpoints: async () => (await store.endpoints.listAll()).map((e) => ({ id: e.id, name: e.name, type: e.type })),
    // Pods are built in a later phase; they are read only when scraped.
    pods: () => late.pods!.all(),
  })
  // Endpoint metrics for the API and the console: counted in memory, flushed as buckets by every replica.
  // Gauges are sampled where the workers live (the leader).
  const endpointMetrics = new EndpointMetricsRecorder({
    store,
    clock,
    log,
    flushIntervalMs: config.metricsFlushMs,
    gauges: async () => {
      if (!leadership.isLeader) return []
      return Promise.all(
        (await store.endpoints.listAll()).map(async (e) => {
          const h = late.workers!.health(e.id)
          const c = await store.jobs.counts(e.id)
          return {
            endpointId: e.id,
            workersRunning: h.running,
            workersIdle: h.idle,
            workersThrottled: h.throttled,
            queueDepth: c.inQueue,
          }
        }),
      )
    },
  })
  const counted = allMetrics(metrics, endpointMetrics)
  const events = new JobEvents(feed)
  const webhookSecrets = new WebhookSecrets({
    store,
    clock,
    secrets: p.resources.secrets,
    overlapMs: config.jobs.webhookSecretOverlapMs,
  })
  const webhooks = new WebhookDispatcher({
    store,
    clock,
    log,
    signingKeys: (endpointId, now) => webhookSecrets.signingKeys(endpointId, now),
    retryDelayMs: config.jobs.webhookRetryDelayMs,
    timeoutMs: config.jobs.webhookTimeoutMs,
    metrics: counted,
    feed,
  })
  const lifecycle = new JobLifecycle({ store, clock, events, webhooks, metrics: counted })
  return { metrics, endpointMetrics, counted, events, webhookSecrets, webhooks, lifecycle }
}

/**
 * Phase 4, where workloads run and what drives the workers. Workers are local processes, or containers on hosts
 * that name a Docker/Podman engine, or Pods of a cluster. What the runtime cannot keep apart is said here, once,
 * before anything runs on it. Each part is built on the ones before it; the cycles between them are closed last.
 */
function buildWorkersAndRuntime(
  config: Config,
  opts: StartOptions,
  p: { opened: Opened; resources: Resources; jobs: Jobs; addresses: Addresses },
) {
  const { store, clock, log, sandbox, feed } = p.opened
  const { kube, catalog, registries, networkVolumes, meter } = p.resources
  const { metrics, counted, events, lifecycle } = p.jobs
  const engines = hostEngines(config)
  warnOfWeakIsolation(config, engines, sandbox, log)
  const cgroups = config.runtime.process.limits ? probeCgroups() : null
  if (cgroups?.kind === 'none')
    log.warn(
      { reason: cgroups.reason },
      `local workers and pods run without memory, CPU and process limits: ${cgroups.reason}`,
    )
  const limits = cgroups
    ? {
        cgroups,
        pids: config.runtime.process.pidsLimit,
        diskCheckIntervalMs: config.runtime.process.diskCheckIntervalMs,
      }
    : undefined
  const trustedAccount = async (accountId: string) => (await store.accounts.get(accountId))?.name === ADMIN_ACCOUNT
  const built = buildRuntime(
    config,
    workerHostEnv(),
    { sandbox, trustedAccount, limits },
    kube ? { driver: kube.driver, hostIds: kube.hosts.map((h) => h.id) } : undefined,
  )
  // Secret references in env are resolved as each workload starts, the last step before its driver.
  const runtime = withSecretEnv(
    opts.runtime ? new HostRuntimes(opts.runtime(built), new Map()) : built,
    p.resources.secretService,
  )
  // Workers call the control plane at workerUrl (see initialWorkerUrl); a host's engine may say how its
  // containers reach it.
  const kubeHosts = new Set(kube?.hosts.map((h) => h.id))
  const workerUrlOf = (hostId: string) =>
    engines.get(hostId)?.controlPlaneUrl ??
    (kubeHosts.has(hostId) ? config.runtime?.kubernetes?.controlPlaneUrl : undefined) ??
    p.addresses.workerUrl
  const monotonic = opts.monotonic
  const workers = new WorkerService({
    store,
    clock,
    monotonic,
    runtime,
    catalog,
    lifecycle,
    events,
    config: config.jobs,
    networkVolumes,
    installationId: installationId(config.dataDir),
    baseUrl: workerUrlOf,
    runtimeOf: (hostId) => runtime.runtimeOf(hostId),
    log,
    pullAuth: (ep) => pullAuth(registries, ep),
    metrics: counted,
    lbDrainMs: config.loadBalancer.requestTimeoutMs,
    meter,
    share: p.resources.quotas,
    feed,
  })
  // LOAD_BALANCER endpoints: health checks make workers ready; the balancer hands requests to ready ones.
  const health = new HealthPoller({ workers, config: config.loadBalancer, log })
  const balancer = new LoadBalancer({
    workers,
    health: (id) => health.health(id),
    coldStartTimeoutMs: config.loadBalancer.coldStartTimeoutMs,
  })
  // The scaler drives the workers from queued jobs and waiting requests (it subscribes to both when it starts).
  const dropped = new DroppedTakes(clock)
  const scaler = new Autoscaler({
    store,
    workers,
    events,
    log,
    clock,
    monotonic,
    config: config.jobs,
    loadBalancer: balancer,
    dropped,
    share: p.resources.quotas,
  })
  // Cycles, closed once both ends exist: the workers list shows the scaler's and the health checks' view of
  // the workers they watch; a READY check hands waiting requests to the balancer's workers; the metrics, which
  // the worker service reports to, count its workers.
  workers.attach({ scaler, health })
  health.onChecked((endpointId, h) => h === 'READY' && balancer.dispatch(endpointId))
  metrics.countWorkers(() =>
    workers
      .endpointsWithWorkers()
      .map((endpointId) => ({ endpointId, byStatus: workerCountsOf(workers.health(endpointId)) })),
  )
  return { runtime, kubeHosts, workers, health, balancer, dropped, scaler }
}

/**
 * Workers call the control plane at workerUrl, or on its local address (whatever publicUrl says). Known before
 * listen unless the port is 0, so that workers of a previous run can be adopted (listen sets the bound one).
 */
function initialWorkerUrl(config: Config): string {
  return config.workerUrl ?? (config.port === 0 ? '' : publicBaseUrl({ ...config, publicUrl: undefined }, config.port))
}

/** Says once, at start, what the runtime of this configuration does not keep apart. */
function warnOfWeakIsolation(
  config: Config,
  engines: ReturnType<typeof hostEngines>,
  sandbox: ReturnType<typeof probeSandbox>,
  log: Log,
): void {
  // Containers on the host's network reach its loopback (Redis, PostgreSQL, other workloads' ports).
  for (const [hostId, engine] of engines) {
    if (engine.network === 'host') {
      log.warn(
        { host: hostId, network: 'host' },
        `containers of host ${hostId} share its network, loopback included: with several tenants set the engine's "network" to "bridge" and a controlPlaneUrl containers reach (docs/security.md)`,
      )
    }
  }
  // Local processes run in a sandbox where this machine has one; without it only the admin's workloads run here.
  if (sandbox.kind === 'none') {
    log.warn(
      { reason: sandbox.reason, trustTenants: config.runtime.process.trustTenants },
      config.runtime.process.trustTenants
        ? `local workers and pods run WITHOUT a sandbox (${sandbox.reason}): every account's programs can read this server's secrets (runtime.process.trustTenants is true)`
        : `local workers and pods run without a sandbox (${sandbox.reason}): only the admin account's run on this host; install bubblewrap, or set runtime.process.trustTenants to run every account's`,
    )
  }
  if (sandbox.kind === 'bwrap' && sandbox.network.mode === 'host')
    log.warn(
      { network: 'host' },
      "local workers and pods share this host's network (runtime.process.network is \"host\"): every program reaches the host's loopback services and the others' ports",
    )
  // Root is not needed: with user namespaces the sandbox works for an ordinary user (see docs/security.md).
  if (process.getuid?.() === 0)
    log.warn(
      { uid: 0 },
      'running as root: Hangar does not need it (the sandbox uses user namespaces); run it as a user of its own, such as "hangar" (docs/security.md)',
    )
}

/**
 * Phase 5, the services the API calls: job operations for clients and for workers, deadline sweeps, engine
 * pings, pods and clusters, endpoints and rate limits. Built on the workers and the scaler of phase 4.
 */
function buildServices(
  config: Config,
  opts: StartOptions,
  p: { opened: Opened; resources: Resources; jobs: Jobs; fleet: FleetParts; addresses: Addresses },
) {
  const { store, clock, log, feed } = p.opened
  const { catalog, secrets, templates, registries, networkVolumes, sshKeys } = p.resources
  const { events, lifecycle, webhookSecrets } = p.jobs
  const { runtime, kubeHosts, workers, scaler, dropped } = p.fleet
  const jobs = new JobService({
    store,
    clock,
    events,
    lifecycle,
    workerHealth: (id) => workers.health(id),
    waitingReason: (job) => scaler.waitingReason(job.endpointId, job.lowPriority)?.message,
    streamWaitMs: config.jobs.streamWaitMs,
    secrets,
    idempotencyWindowMs: config.jobs.idempotencyWindowMs,
  })
  const workerJobs = new WorkerJobService({
    store,
    clock,
    events,
    lifecycle,
    workers,
    takeWaitMs: config.jobs.takeWaitMs,
    secrets,
    dropped,
    log,
  })
  const sweeper = new JobSweeper({ store, clock, lifecycle, workers, log, intervalMs: config.jobs.sweepIntervalMs })
  // Cluster hosts are not pinged: a slow or restarting API server does not mean Pods ended (the watch says when they do).
  const hostMonitor = new HostMonitor({
    hosts: runtime.engineHosts().filter((h) => !kubeHosts.has(h)),
    runtime,
    fleet: catalog.fleet,
    workers,
    log,
    intervalMs: config.enginePingIntervalMs,
  })
  const podEvents = opts.podEvents ?? new PodEvents()
  const pods = new PodService({
    store,
    clock,
    catalog,
    runtime,
    templates,
    registries,
    networkVolumes,
    sshKeys,
    events: podEvents,
    log,
    dataDir: config.dataDir,
    stopGraceMs: config.jobs.stopGraceMs,
    installationId: installationId(config.dataDir),
    quotas: p.resources.quotas,
  })
  const clusters = new ClusterService({
    store,
    clock,
    catalog,
    pods,
    networkVolumes,
    sshKeys,
    quotas: p.resources.quotas,
  })
  const endpoints = new EndpointService({
    store,
    catalog,
    clock,
    templates,
    registries,
    networkVolumes,
    publicUrl: () => p.addresses.url,
    lbDomain: config.loadBalancer.domain,
    workerVersions: async (id) => workers.versions(id),
    quotas: p.resources.quotas,
    feed,
    webhookSecrets,
  })
  // Counters live in Redis when several replicas must share one budget, else in this process. Job
  // operations of an endpoint are allowed more the more workers it runs.
  const counters: CounterStore = config.redisUrl ? new RedisCounterStore(config.redisUrl) : new MemoryCounterStore()
  const rateLimiter = new RateLimiter({
    counters,
    clock,
    quotas: config.rateLimits.management,
    perWorker: config.rateLimits.perWorker,
    runningWorkers: (endpointId) => workers.runningCount(endpointId),
  })
  return { jobs, workerJobs, sweeper, hostMonitor, podEvents, pods, clusters, endpoints, counters, rateLimiter }
}

/**
 * Phase 6, what the leader does, and taking part in the election. A sole process leads at once, before it
 * listens (the recoveries of onLead run before anyone can call); the loops start only once the server listens
 * too (workers must be given its bound address, unknown before with port 0): a deviation from the
 * store -> runtime -> services -> scaler order. Returns `listening`, which listen calls once it does.
 */
async function leaderRole(p: {
  opened: Opened
  resources: Resources
  jobs: Jobs
  fleet: FleetParts
  services: Services
}) {
  const { store, leadership } = p.opened
  const { prices, meter, networkVolumes } = p.resources
  const { webhooks } = p.jobs
  const { workers, health, scaler } = p.fleet
  const { sweeper, hostMonitor, pods, podEvents } = p.services
  let listening = false
  let looping = false
  let unmeterPods: (() => void) | null = null
  const startLoops = () => {
    if (looping || !listening || !leadership.isLeader) return
    looping = true
    sweeper.start()
    webhooks.start()
    scaler.start()
    hostMonitor.start()
    health.start()
    meter.start()
    void p.resources.quotas.start(spendEnforcer({ store, workers, pods, log: p.opened.log }))
  }
  const onLead = async () => {
    // Workers of a previous run (or of a leader that died) are adopted or stopped, and the jobs of those not
    // adopted requeued: before anyone can call on a sole process (it leads before it listens); while the other
    // replicas' workers keep calling on several (see WorkerService.lead).
    await workers.lead({ keepRunningJobs: leadership.shared })
    // Pods outlive the control plane: those of the previous run are adopted (or started again), before
    // anyone can call and before the autoscaler places workers on the capacity they hold.
    await pods.recover()
    // Then the ledger, from what really exists after both recoveries: volumes, pods (compute only when
    // adopted RUNNING); whatever ended with the previous run (workers, dead pods) is closed.
    const podsNow = (await store.pods.list({ includeClusterPods: true })).map((p) => podUsage(prices, p))
    await meter.recover([
      ...(await networkVolumes.all()).flatMap((v) => volumeUsage(prices, v)),
      ...podsNow.flatMap((u) => [...u.compute, ...u.disk]),
    ])
    unmeterPods = podEvents.on((t) => meter.podTransition(t))
    startLoops()
  }
  // Leadership lost (another process leads now), or the control plane stops. No new decisions first, then
  // the workers: the last process stops them (SIGTERM, SIGKILL after the grace period; their running jobs go
  // back to the queue for the next start); when another process will take over they are handed over,
  // running, to it, and it adopts them. Webhook attempts in flight finish; pending ones stay recorded and resume on
  // the next leader.
  const onLose = async (_reason: string, handover: boolean) => {
    looping = false
    await hostMonitor.stop()
    await p.resources.quotas.stop()
    // A start still waiting on the runtime (an unschedulable Pod) would hold the scaler's run in flight.
    workers.cancelStarts()
    await scaler.stop()
    await sweeper.stop()
    if (handover) workers.follow()
    else await workers.stopAll('the control plane is stopping')
    await health.stop()
    // Pods keep running: the next leader (or start) adopts them.
    await pods.detach()
    // After the workers: their last intervals close, then a final note of when the control plane stopped.
    await meter.stop()
    unmeterPods?.()
    unmeterPods = null
    await webhooks.stop()
  }
  // Not the leader until the lock says so; a sole process leads at once, before it listens.
  workers.follow()
  await leadership.start(onLead, onLose)
  return {
    /** The server listens: the loops start now if this process leads (else when it comes to lead). */
    listening: () => {
      listening = true
      startLoops()
    },
  }
}

/**
 * Phase 7, serving: the API is built on the services and listens; only then is the admin key made (a start
 * that fails, port in use, makes no key that would never be shown), the bound addresses handed to those that
 * wait for them, and the leader's loops started. A listen that fails closes what the phases before opened.
 */
async function listen(
  config: Config,
  opts: StartOptions,
  p: {
    opened: Opened
    resources: Resources
    jobs: Jobs
    fleet: FleetParts
    services: Services
    role: Role
    addresses: Addresses
  },
): Promise<Hangar> {
  const { store, leadership, feed, lock, logger, accounts, clock } = p.opened
  const { catalog, templates, registries, networkVolumes, sshKeys, billing, secrets } = p.resources
  const { metrics, endpointMetrics } = p.jobs
  const { workers, balancer } = p.fleet
  const { jobs, workerJobs, pods, clusters, endpoints, rateLimiter, counters } = p.services
  const { addresses } = p
  // With several replicas, what needs the leader's live state is forwarded to it, at the address it advertises.
  const replicas = leadership.shared ? { leadership, self: () => addresses.internalUrl } : undefined
  const app = await buildApp({
    replicas,
    logger: logger || false,
    bodyLimit: config.bodyLimit,
    limits: config.limits,
    accounts,
    catalog,
    templates,
    endpoints,
    registries,
    networkVolumes,
    sshKeys,
    rateLimiter,
    jobs,
    openai: new OpenAiService(jobs),
    workerJobs,
    workers,
    pods,
    clusters,
    balancer,
    billing,
    quotas: p.resources.quotas,
    loadBalancer: config.loadBalancer,
    publicUrl: () => addresses.url,
    metrics,
    endpointMetrics,
    podLinks: new PodLinks({ secrets, clock }),
    secrets: p.resources.secretService,
    audit: p.resources.audit,
    signIns: signInsOf(config, { accounts, counters, box: secrets, clock, publicUrl: () => addresses.url }),
    metricsToken: config.metricsToken,
    consoleDir: CONSOLE_DIR,
    docsDir: DOCS_DIR,
    draining: () => connections.draining,
  })
  await opts.configureApp?.(app)
  const connections = trackConnections(app.server)
  try {
    await app.listen({ host: config.host, port: config.port })
  } catch (err) {
    // Workers adopted by this start keep running (a sole process leaves them for the next start).
    workers.follow()
    await leadership.stop()
    await feed.stop()
    await counters.close()
    await store.close()
    lock?.release()
    throw err
  }
  const adminKey = await accounts.bootstrap(config.adminApiKey)
  let adminKeyFile: string | null = null
  if (adminKey && !config.adminApiKey) {
    adminKeyFile = join(config.dataDir, 'admin-key')
    writeFileSync(adminKeyFile, adminKey + '\n', { mode: 0o600 })
    chmodSync(adminKeyFile, 0o600)
  } else if (!config.adminApiKey) {
    adminKeyFile = join(config.dataDir, 'admin-key')
  }
  const address = app.server.address()
  const port = typeof address === 'object' && address ? address.port : config.port
  addresses.url = publicBaseUrl(config, port)
  addresses.workerUrl = config.workerUrl ?? publicBaseUrl({ ...config, publicUrl: undefined }, port)
  addresses.internalUrl = (config.internalUrl ?? publicBaseUrl({ ...config, publicUrl: undefined }, port)).replace(
    /\/+$/,
    '',
  )
  leadership.advertise(addresses.internalUrl)
  p.role.listening()
  endpointMetrics.start()

  let stopping: Promise<void> | undefined
  return {
    url: addresses.url,
    adminKey,
    adminKeyFile,
    app,
    store,
    catalog,
    jobs,
    workers,
    sweeper: p.services.sweeper,
    scaler: p.fleet.scaler,
    webhooks: p.jobs.webhooks,
    hostMonitor: p.services.hostMonitor,
    pods,
    podEvents: p.services.podEvents,
    meter: p.resources.meter,
    billing,
    quotas: p.resources.quotas,
    endpointMetrics,
    stop: () => (stopping ??= stopInOrder({ ...p, app, connections, drainMs: config.drainMs })),
  }
}

/**
 * Stops a started control plane, the reverse of its start: requests first (so none is cut off half done),
 * then the leader's work, then what everything above wrote to or listened on, the store last.
 */
async function stopInOrder(p: {
  opened: Opened
  resources: Resources
  jobs: Jobs
  fleet: FleetParts
  services: Services
  app: App
  connections: TrackedConnections
  drainMs: number
}): Promise<void> {
  const { app, connections } = p
  // Draining: /readyz says 503 and every response closes its connection, so clients reconnect (to another
  // replica once the orchestrator has taken this one out) instead of sending on a connection closed under them.
  connections.drain()
  // Release long-polls (job-take, runsync, stream) so closing the server does not wait them out,
  // then close the server (it finishes requests in flight).
  p.jobs.events.close()
  // Requests waiting for a load-balancing worker get a 503 now rather than after the cold-start limit.
  p.fleet.balancer.close()
  // Requests keep being served (each closing its connection) for `drainMs`: a worker's result posted on a
  // connection it had open reaches this replica, not a closed socket.
  if (p.drainMs > 0) await new Promise((resolve) => setTimeout(resolve, p.drainMs))
  // Connections serving no request are closed as they appear, so close() waits only for requests.
  connections.closeUnused()
  const sweepIdle = setInterval(() => connections.closeUnused(), 50)
  try {
    await app.close()
  } finally {
    clearInterval(sweepIdle)
  }
  // The leader's work ends (leaderRole's onLose: loops, then workers and pods), and leadership is released
  // for another process to take. The feed goes after: stopping workers still wakes waiters elsewhere.
  // The store goes last: everything above writes to it.
  await p.opened.leadership.stop()
  if (p.resources.kubeRefresh) clearInterval(p.resources.kubeRefresh)
  await p.resources.kube?.close()
  await p.opened.feed.stop()
  await p.services.counters.close()
  // What was counted since the last flush is written before the store closes.
  await p.jobs.endpointMetrics.stop()
  await p.opened.store.close()
  p.opened.lock?.release()
}

/** Limits on failed sign-ins, and the OpenID Connect provider members sign in with where one is configured. */
function signInsOf(
  config: Config,
  deps: { accounts: AccountService; counters: CounterStore; box: SecretBox; clock: Clock; publicUrl: () => string },
) {
  const { members } = config
  return {
    throttle: new SignInThrottle({ counters: deps.counters, clock: deps.clock, limits: members.signInLimits }),
    oidc: members.oidc
      ? new OidcSignIn({ ...deps, settings: members.oidc, members: deps.accounts.members })
      : undefined,
  }
}

/** /health's worker counters under the status names GET .../workers uses (`ready` is idle + running, not a status). */
function workerCountsOf(h: WorkerHealth): Record<string, number> {
  return {
    RUNNING: h.running,
    IDLE: h.idle,
    INITIALIZING: h.initializing,
    THROTTLED: h.throttled,
    UNHEALTHY: h.unhealthy,
  }
}
