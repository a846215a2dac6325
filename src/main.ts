import { chmodSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import pino from 'pino'
import { buildApp, type App } from './api/app.js'
import { trackConnections } from './api/drain.js'
import { CatalogService } from './catalog/CatalogService.js'
import { detectMachine } from './catalog/detect.js'
import { publicBaseUrl, workerHostEnv, type Config } from './config.js'
import { systemClock, type Clock } from './domain/clock.js'
import type { CounterStore } from './ratelimit/CounterStore.js'
import { MemoryCounterStore } from './ratelimit/MemoryCounterStore.js'
import { RateLimiter } from './ratelimit/RateLimiter.js'
import { RedisCounterStore } from './ratelimit/RedisCounterStore.js'
import { AccountService } from './services/AccountService.js'
import { NetworkVolumeService } from './services/NetworkVolumeService.js'
import { RegistryService } from './services/RegistryService.js'
import { SecretBox } from './services/SecretBox.js'
import { SshKeyService } from './services/SshKeyService.js'
import { TemplateService } from './services/TemplateService.js'
import { EndpointService } from './services/EndpointService.js'
import { Autoscaler } from './autoscaler/Autoscaler.js'
import { JobEvents } from './services/JobEvents.js'
import { JobLifecycle } from './services/JobLifecycle.js'
import { JobService } from './services/JobService.js'
import { JobSweeper } from './services/JobSweeper.js'
import { silentLog, type Log } from './services/log.js'
import { WebhookDispatcher } from './services/WebhookDispatcher.js'
import { WorkerJobService } from './services/WorkerJobService.js'
import { WorkerService } from './services/WorkerService.js'
import { ProcessDriver } from './runtime/process/ProcessDriver.js'
import type { RuntimeDriver } from './runtime/RuntimeDriver.js'
import { SqliteStore } from './store/sqlite/SqliteStore.js'
import type { Store } from './store/Store.js'

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
  readonly scaler: Autoscaler
  readonly webhooks: WebhookDispatcher
  /** Stops accepting requests, finishes those in flight, then closes the store. */
  stop(): Promise<void>
}

export interface StartOptions {
  clock?: Clock
  /** Overrides the pino logger built from config.logLevel (tests pass false). */
  logger?: pino.Logger | false
  /** Adds routes or hooks before the server listens (embedders, and tests of error handling). */
  configureApp?: (app: App) => void | Promise<void>
}

/** The composition root: config -> store -> services -> api, then listen. */
export async function startHangar(config: Config, opts: StartOptions = {}): Promise<Hangar> {
  const clock = opts.clock ?? systemClock
  const logger = opts.logger ?? (config.logLevel === 'silent' ? false : pino({ level: config.logLevel }))
  mkdirSync(config.dataDir, { recursive: true })

  const store = new SqliteStore(join(config.dataDir, 'hangar.db'))
  const accounts = new AccountService({ store, clock })
  const adminKey = await accounts.bootstrap(config.adminApiKey)
  let adminKeyFile: string | null = null
  if (adminKey && !config.adminApiKey) {
    adminKeyFile = join(config.dataDir, 'admin-key')
    writeFileSync(adminKeyFile, adminKey + '\n', { mode: 0o600 })
    chmodSync(adminKeyFile, 0o600)
  } else if (!config.adminApiKey) {
    adminKeyFile = join(config.dataDir, 'admin-key')
  }

  // Counters live in Redis when several replicas must share one budget, else in this process.
  const counters: CounterStore = config.redisUrl ? new RedisCounterStore(config.redisUrl) : new MemoryCounterStore()
  const rateLimiter = new RateLimiter({
    counters,
    clock,
    quotas: config.rateLimits.management,
    perWorker: config.rateLimits.perWorker,
    runningWorkers: (endpointId) => workers.runningCount(endpointId),
  })

  const machine = await detectMachine(config.fleet.detectGpus)
  const catalog = new CatalogService(config.catalog, config.fleet, machine)
  // Registry credentials are sealed with a key kept beside (not inside) the database.
  const registries = new RegistryService({ store, clock, secrets: SecretBox.open(join(config.dataDir, 'secret.key')) })
  const templates = new TemplateService({ store, clock, registries })
  const networkVolumes = new NetworkVolumeService({ store, clock, catalog, volumesDir: join(config.dataDir, 'volumes') })
  const sshKeys = new SshKeyService({ store, clock })

  let url = ''
  const endpoints = new EndpointService({ store, catalog, clock, templates, registries, networkVolumes, publicUrl: () => url, workerVersions: async (id) => workers.versions(id) })

  // Jobs. The lifecycle is the only writer of job states; events wake waiting requests.
  const log: Log = logger || silentLog
  const events = new JobEvents()
  const webhooks = new WebhookDispatcher({ store, clock, log, retryDelayMs: config.jobs.webhookRetryDelayMs, timeoutMs: config.jobs.webhookTimeoutMs })
  const lifecycle = new JobLifecycle({ store, clock, events, webhooks })
  // Workers are local processes; another RuntimeDriver (Docker, Kubernetes) would be chosen here.
  const runtime: RuntimeDriver = new ProcessDriver()
  // Workers run on this machine and call the control plane on its local address, whatever publicUrl says.
  let workerUrl = ''
  const workers = new WorkerService({ store, clock, runtime, catalog, lifecycle, events, config: config.jobs, images: config.images, dataDir: config.dataDir, baseUrl: () => workerUrl, log, hostEnv: workerHostEnv(), waiting: (id) => scaler.waiting(id) })
  // Before anyone can call: workers of a previous run are stopped and their jobs requeued.
  await workers.recover()
  const jobs = new JobService({ store, clock, events, lifecycle, workerHealth: (id) => workers.health(id), waitingReason: (job) => scaler.waitingReason(job.endpointId, job.lowPriority)?.message, streamWaitMs: config.jobs.streamWaitMs })
  const workerJobs = new WorkerJobService({ store, clock, events, lifecycle, workers, takeWaitMs: config.jobs.takeWaitMs })
  const sweeper = new JobSweeper({ store, clock, lifecycle, workers, log, intervalMs: config.jobs.sweepIntervalMs })
  const scaler: Autoscaler = new Autoscaler({ store, workers, events, log, clock, config: config.jobs })

  const app = await buildApp({ logger: logger || false, bodyLimit: config.bodyLimit, accounts, catalog, templates, endpoints, registries, networkVolumes, sshKeys, rateLimiter, jobs, workerJobs, workers, publicUrl: () => url })
  await opts.configureApp?.(app)
  const connections = trackConnections(app.server)
  try {
    await app.listen({ host: config.host, port: config.port })
  } catch (err) {
    await counters.close()
    await store.close()
    throw err
  }
  const address = app.server.address()
  const port = typeof address === 'object' && address ? address.port : config.port
  url = publicBaseUrl(config, port)
  workerUrl = publicBaseUrl({ ...config, publicUrl: undefined }, port)
  // Started after listen (a deviation from store -> runtime -> services -> scaler order): workers must
  // be given the bound address, unknown before with port 0.
  sweeper.start()
  webhooks.start()
  scaler.start()

  let stopping: Promise<void> | undefined
  return {
    url,
    adminKey,
    adminKeyFile,
    app,
    store,
    catalog,
    jobs,
    workers,
    sweeper,
    scaler,
    webhooks,
    stop: () =>
      (stopping ??= (async () => {
        // Release long-polls (job-take, runsync, stream) so closing the server does not wait them out,
        // then close the server (it finishes requests in flight).
        events.close()
        // Connections serving no request are closed as they appear, so close() waits only for requests.
        connections.closeUnused()
        const sweepIdle = setInterval(() => connections.closeUnused(), 50)
        try {
          await app.close()
        } finally {
          clearInterval(sweepIdle)
        }
        // No new decisions, then stop the workers (SIGTERM, SIGKILL after the grace period); their running
        // jobs go back to the queue for the next start. Webhook attempts in flight finish; pending ones
        // stay recorded and resume at the next start. The store goes last: everything above writes to it.
        await scaler.stop()
        await sweeper.stop()
        await workers.stopAll('the control plane is stopping')
        await webhooks.stop()
        await counters.close()
        await store.close()
      })()),
  }
}
