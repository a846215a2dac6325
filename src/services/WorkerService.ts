import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import type { CatalogService } from '../catalog/CatalogService.js'
import type { WorkerList } from '../contract/worker.js'
import type { Clock } from '../domain/clock.js'
import type { EndpointRecord } from '../domain/endpoint.js'
import { notFound } from '../domain/errors.js'
import { newId } from '../domain/ids.js'
import { parkWindowMs, type WorkerSnapshot } from '../domain/planScaling.js'
import type { ImagesConfig } from '../runtime/images.js'
import type { RuntimeDriver, WorkerExit, WorkerHandle } from '../runtime/RuntimeDriver.js'
import type { WorkerLog } from '../runtime/WorkerLog.js'
import { buildWorkerSpec } from '../runtime/workerSpec.js'
import type { Store } from '../store/Store.js'
import { CrashBackoff } from './CrashBackoff.js'
import type { JobEvents } from './JobEvents.js'
import type { JobLifecycle } from './JobLifecycle.js'
import type { JobsConfig } from './jobsConfig.js'
import type { WorkerHealth } from './JobService.js'
import { newLiveWorker, snapshotOf, type LiveWorker, type WorkerPhase } from './LiveWorker.js'
import type { Log } from './log.js'
import { loseJob } from './loseJob.js'
import { WorkerLogArchive } from './WorkerLogArchive.js'
import { WorkerPlacer } from './WorkerPlacer.js'
import { workerHealth, workerList, type WorkerListContext } from './workerList.js'
import { newWorkerRecord } from './workerRecord.js'
import { volumePath } from './volumePath.js'

export interface WorkerServiceDeps {
  store: Store
  clock: Clock
  runtime: RuntimeDriver
  catalog: CatalogService
  lifecycle: JobLifecycle
  events: JobEvents
  config: JobsConfig
  images: ImagesConfig
  dataDir: string
  /** Base URL of the control plane as workers reach it (read at each start: known only after listen). */
  baseUrl: () => string
  log: Log
  /** Host variables a local worker process inherits (PATH, LANG, ...), read by config.ts. */
  hostEnv: Record<string, string>
  /** Monotonic ms for heartbeats: process liveness is real time, whatever the business clock says. */
  monotonic?: () => number
  /** Why an endpoint's waiting jobs wait (from the autoscaler), for the workers list. */
  waiting?: (endpointId: string) => WorkerListContext['waiting']
}

/** Outcome of adding a worker; `capacity` tells "no room in the fleet" (it stays THROTTLED) from a broken worker. */
export type StartResult = { ok: true; workerId: string } | { ok: false; capacity: boolean; reason: string }

/**
 * Serverless workers: placing them in the fleet, starting and stopping them through the RuntimeDriver,
 * parking them (FlashBoot), their protocol keys, heartbeats, crash back-off, and what happens to their
 * jobs when they die. Live state is in memory (see LiveWorker); the store keeps what a restart must know.
 */
export class WorkerService {
  private readonly live = new Map<string, LiveWorker>()
  private readonly endedLogs: WorkerLogArchive
  private readonly backoff: CrashBackoff
  private readonly placer: WorkerPlacer
  private readonly mono: () => number

  constructor(private readonly deps: WorkerServiceDeps) {
    this.mono = deps.monotonic ?? (() => performance.now())
    this.endedLogs = new WorkerLogArchive(deps.dataDir)
    this.backoff = new CrashBackoff({ baseMs: deps.config.crashBackoffMs, maxMs: deps.config.crashBackoffMaxMs, now: this.mono })
    this.placer = new WorkerPlacer({ catalog: deps.catalog, parked: () => [...this.live.values()].filter((w) => w.phase === 'parked'), evict: (w, why) => void this.stop(w.id, why) })
    deps.events.onJobLeftWorker((workerId, jobId) => this.jobLeft(workerId, jobId))
  }

  /**
   * After a restart: stops the workers of the previous run that still run (same pid and start marker),
   * marks them gone, and sends their running jobs back to the queue (counted as retried).
   */
  async recover(): Promise<void> {
    const { store, runtime, clock, log } = this.deps
    for (const w of await store.workers.listActive()) {
      const killed = await runtime.reap({ pid: w.pid, pidMarker: w.pidMarker })
      await store.workers.update(w.id, { state: 'EXITED', stoppedAt: clock.now(), lastError: 'the control plane restarted' })
      log.info({ workerId: w.id, endpointId: w.endpointId, killed }, 'worker of the previous run stopped')
    }
    for (const job of await store.jobs.listInProgress()) await loseJob(this.deps.lifecycle, job, job.workerId ?? '', 'the control plane restarted while it ran', true)
  }

  /** Adds a worker to `ep`: placed and started when capacity allows, else kept THROTTLED until it fits. */
  async start(ep: EndpointRecord): Promise<StartResult> {
    const w = newLiveWorker(newId(), ep.id, ep.accountId, this.mono())
    this.live.set(w.id, w)
    return this.launch(w, ep)
  }

  /** Tries again to place a THROTTLED worker. */
  async place(workerId: string, ep: EndpointRecord): Promise<StartResult> {
    const w = this.live.get(workerId)
    if (w?.phase !== 'throttled') return { ok: false, capacity: false, reason: `worker ${workerId} is not waiting for capacity` }
    return this.launch(w, ep)
  }

  /** An UNHEALTHY worker's back-off is over: a fresh worker takes its place. */
  async replace(workerId: string, ep: EndpointRecord): Promise<StartResult> {
    if (this.live.get(workerId)?.phase !== 'unhealthy') return { ok: false, capacity: false, reason: `worker ${workerId} is not unhealthy` }
    this.live.delete(workerId)
    return this.start(ep)
  }

  private async launch(w: LiveWorker, ep: EndpointRecord): Promise<StartResult> {
    const { store, clock, runtime, log } = this.deps
    const allocation = this.placer.reserve(w.id, ep)
    if ('reason' in allocation) {
      if (w.lastError !== allocation.reason) log.warn({ workerId: w.id, endpointId: ep.id, reason: allocation.reason }, 'no capacity for a worker')
      w.lastError = allocation.reason
      return { ok: false, capacity: true, reason: allocation.reason }
    }
    w.phase = 'starting'
    const token = `hw_${randomBytes(24).toString('base64url')}`
    const now = clock.now()
    w.allocation = allocation
    w.record = newWorkerRecord(w.id, ep, allocation, hash(token), now)
    const spec = buildWorkerSpec({
      endpoint: ep,
      workerId: w.id,
      token,
      baseUrl: this.deps.baseUrl(),
      images: this.deps.images,
      dataDir: this.deps.dataDir,
      pingIntervalMs: this.deps.config.pingIntervalMs,
      allocation,
      volumePath: await volumePath(store, this.deps.dataDir, ep),
      hostEnv: this.deps.hostEnv,
    })
    if ('error' in spec) return this.startFailed(w, spec.error, false)
    await store.workers.insert(w.record)
    let handle: WorkerHandle
    try {
      handle = await runtime.start(spec)
    } catch (err) {
      return this.startFailed(w, (err as Error).message, true)
    }
    const m = this.mono()
    Object.assign(w, { handle, startedAt: m, lastContact: m, idleSince: m, phaseSince: m, lastError: null })
    w.finished = handle.exited.then((exit) => this.onExit(w, exit))
    w.record.startedAt = now
    await store.workers.update(w.id, { pid: handle.pid, pidMarker: handle.pidMarker, startedAt: now })
    // Stopped while it was being started (endpoint deleted, shutdown): finish the job now.
    if ((w.phase as WorkerPhase) === 'stopping') void handle.stop(this.deps.config.stopGraceMs)
    log.info({ workerId: w.id, endpointId: ep.id, pid: handle.pid, host: allocation.hostId, gpu: allocation.gpuTypeId, cpu: allocation.cpuFlavorId }, 'worker started')
    return { ok: true, workerId: w.id }
  }

  /**
   * Stops a worker (SIGTERM, then SIGKILL after the grace period); its running jobs go back to the
   * queue. A THROTTLED or UNHEALTHY worker has no process: it is simply forgotten.
   */
  async stop(workerId: string, reason: string): Promise<void> {
    const w = this.live.get(workerId)
    if (!w) return
    if (w.phase === 'throttled' || w.phase === 'unhealthy') {
      this.live.delete(workerId)
      this.deps.log.info({ workerId, endpointId: w.endpointId, reason }, `${w.phase} worker dropped`)
      return
    }
    if (w.phase !== 'stopping') {
      w.phase = 'stopping'
      w.intentional = true
      this.deps.log.info({ workerId, endpointId: w.endpointId, reason }, 'stopping worker')
      this.deps.events.workerChanged(workerId)
      void this.deps.store.workers.update(workerId, { state: 'STOPPING' })
      void w.handle?.stop(this.deps.config.stopGraceMs)
    }
    await w.finished
  }

  /** Stops every worker (shutdown). */
  async stopAll(reason: string): Promise<void> {
    await Promise.all([...this.live.keys()].map((id) => this.stop(id, reason)))
  }

  /** FlashBoot: an idle worker keeps its process and capacity but takes no job and is not counted. */
  park(workerId: string, reason: string, priority: boolean): boolean {
    const w = this.live.get(workerId)
    if (w?.phase !== 'ready' || w.jobs.size > 0 || w.retiring) return false
    w.phase = 'parked'
    w.phaseSince = this.mono()
    w.parkedPriority = priority
    this.deps.log.info({ workerId, endpointId: w.endpointId, reason, priority }, 'worker parked')
    return true
  }

  /** Takes a parked worker back: its held job-take wakes and takes the waiting job at once. */
  unpark(workerId: string): boolean {
    const w = this.live.get(workerId)
    if (w?.phase !== 'parked') return false
    w.phase = 'ready'
    w.idleSince = this.mono()
    this.deps.log.info({ workerId, endpointId: w.endpointId, parkedMs: Math.round(w.idleSince - w.phaseSince) }, 'parked worker reused')
    this.deps.events.workerChanged(workerId)
    return true
  }

  /** Stops a worker once its running jobs end; it takes no new job meanwhile. */
  retire(workerId: string, reason: string): void {
    const w = this.live.get(workerId)
    if (!w) return
    if (!w.retiring) this.deps.log.info({ workerId, endpointId: w.endpointId, reason }, 'worker retiring')
    w.retiring = true
    if (w.jobs.size === 0) void this.stop(workerId, reason)
  }

  /** The worker asked to be replaced (stopPod): stop it once its running jobs have ended. */
  recycle(workerId: string): void {
    this.retire(workerId, 'the worker asked to be replaced (stopPod)')
  }

  /** True when `token` is the protocol key of live worker `workerId` of endpoint `endpointId`. */
  authenticate(endpointId: string, workerId: string, token: string | undefined): boolean {
    const w = this.live.get(workerId)
    if (!w?.handle || !w.record || !token || w.endpointId !== endpointId) return false
    return timingSafeEqual(Buffer.from(w.record.tokenHash, 'hex'), Buffer.from(hash(token), 'hex'))
  }

  /** Any protocol call is a sign of life; the first one makes the worker ready. */
  contact(workerId: string): void {
    const w = this.live.get(workerId)
    if (!w?.handle) return
    w.lastContact = this.mono()
    if (w.phase === 'starting') {
      w.phase = 'ready'
      w.idleSince = w.lastContact
      if (w.record) w.record.state = 'READY'
      void this.deps.store.workers.update(workerId, { state: 'READY' })
    }
  }

  /** True when the worker gets no more jobs and should not wait for one (it is being stopped, or unknown). */
  isDraining(workerId: string): boolean {
    const w = this.live.get(workerId)
    return !w?.handle || w.phase === 'stopping' || w.phase === 'unhealthy'
  }

  /** True when the worker's job-take must be held without a job: parked, or retiring after its jobs. */
  isHeld(workerId: string): boolean {
    const w = this.live.get(workerId)
    return w?.phase === 'parked' || w?.retiring === true
  }

  jobsTaken(workerId: string, jobIds: string[]): void {
    const w = this.live.get(workerId)
    if (!w) return
    for (const id of jobIds) w.jobs.add(id)
    // Parked while its take was completing: it runs a job, so it is active again.
    if (w.phase === 'parked' && jobIds.length > 0) w.phase = 'ready'
  }

  /** Gives up on workers silent for too long (heartbeats) or that never called in; their jobs are requeued. */
  checkLiveness(): void {
    const { pingIntervalMs, missedPings, workerStartTimeoutMs, healthyAfterMs } = this.deps.config
    const now = this.mono()
    for (const [id, w] of this.live) {
      if (!w.handle || (w.phase !== 'starting' && w.phase !== 'ready' && w.phase !== 'parked')) continue
      const silentFor = now - w.lastContact
      if (w.phase !== 'starting' && silentFor > pingIntervalMs * missedPings) w.lostReason = `worker ${id} sent no heartbeat for ${Math.round(silentFor)} ms (${missedPings} intervals of ${pingIntervalMs} ms)`
      else if (w.phase === 'starting' && now - w.startedAt > workerStartTimeoutMs) w.lostReason = `worker ${id} did not call in within ${workerStartTimeoutMs} ms of starting`
      else {
        if (w.phase === 'ready' && now - w.startedAt >= healthyAfterMs) this.backoff.healthy(w.endpointId)
        continue
      }
      this.deps.log.warn({ workerId: id, endpointId: w.endpointId, reason: w.lostReason }, 'worker lost')
      w.phase = 'stopping'
      this.deps.events.workerChanged(id)
      void w.handle.stop(0)
    }
  }

  /** Workers of an endpoint as the scaler sees them; `version` is the endpoint's current release. */
  snapshot(endpointId: string, version: number | null = null): WorkerSnapshot[] {
    const now = this.mono()
    return this.of(endpointId).map((w) => snapshotOf(w, now, version))
  }

  /** Endpoints that have live workers (of any phase). */
  endpointsWithWorkers(): string[] {
    return [...new Set([...this.live.values()].map((w) => w.endpointId))]
  }

  /** Workers taking jobs (the rate limiter's dynamic limit). */
  runningCount(endpointId: string): number {
    return this.of(endpointId).filter((w) => w.phase === 'ready').length
  }

  /** ms to wait before starting another worker of an endpoint whose workers keep failing (0 = go). */
  backoffMs(endpointId: string): number {
    return this.backoff.remainingMs(endpointId)
  }

  /** Consecutive failures of an endpoint's workers and the last one, for users wondering why nothing runs. */
  failures(endpointId: string): { consecutive: number; last: string | null } {
    return { consecutive: this.backoff.consecutive(endpointId), last: this.backoff.lastReason(endpointId) }
  }

  /** Why the endpoint's throttled workers cannot be placed (the latest placement failure), or null. */
  noCapacityReason(endpointId: string): string | null {
    return this.of(endpointId).filter((w) => w.phase === 'throttled' && w.lastError).pop()?.lastError ?? null
  }

  /** /health worker counters. */
  health(endpointId: string): WorkerHealth {
    return workerHealth(this.of(endpointId))
  }

  /** GET /v2/serverless/{id}/workers: the workers of an endpoint the caller owns, and why jobs wait. */
  async list(accountId: string, endpointId: string): Promise<WorkerList> {
    const ep = (await this.deps.store.endpoints.get(endpointId)) as EndpointRecord | undefined
    if (!ep || ep.accountId !== accountId) throw notFound('endpoint', endpointId)
    return workerList(this.of(endpointId), {
      endpointVersion: ep.version,
      now: this.deps.clock.now(),
      mono: this.mono(),
      backoffMs: this.backoff.remainingMs(endpointId),
      parkWindowMs: parkWindowMs(ep.flashboot, this.deps.config),
      waiting: this.deps.waiting?.(endpointId) ?? { jobs: 0, lowPriorityJobs: 0, reason: null },
    })
  }

  /** Release versions of an endpoint's serving workers (rollout numbers of its releases). */
  versions(endpointId: string): number[] {
    return this.of(endpointId)
      .filter((w) => w.record && (w.phase === 'starting' || w.phase === 'ready'))
      .map((w) => w.record!.version)
  }

  /**
   * The output of a worker of an endpoint the caller owns: live, recently ended (memory), or older (its log
   * file). A foreign endpoint or worker is answered like a missing one.
   */
  async logs(accountId: string, endpointId: string, workerId: string): Promise<WorkerLog> {
    const ep = await this.deps.store.endpoints.get(endpointId)
    if (!ep || ep.accountId !== accountId) throw notFound('endpoint', endpointId)
    const w = await this.deps.store.workers.get(workerId)
    if (!w || w.endpointId !== endpointId) throw notFound('worker', workerId)
    return this.live.get(workerId)?.handle?.logs ?? this.endedLogs.find(workerId)
  }

  private of(endpointId: string): LiveWorker[] {
    return [...this.live.values()].filter((w) => w.endpointId === endpointId)
  }

  private jobLeft(workerId: string, jobId: string): void {
    const w = this.live.get(workerId)
    if (!w || !w.jobs.delete(jobId)) return
    w.jobsDone++
    // A worker that saw a job through is healthy, whatever the job's outcome.
    this.backoff.healthy(w.endpointId)
    if (w.jobs.size > 0) return
    w.idleSince = this.mono()
    if (w.retiring) void this.stop(workerId, 'retired once its jobs ended')
  }

  private async onExit(w: LiveWorker, exit: WorkerExit): Promise<void> {
    const { store, catalog, clock, events, log } = this.deps
    const id = w.id
    catalog.fleet.release(id)
    events.forgetWorker(id)
    if (w.handle) this.endedLogs.remember(id, w.handle.logs)
    const how = exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`
    const crashed = !w.intentional
    const reason = w.lostReason ?? `worker ${id} exited (${how})`
    // A crash leaves an UNHEALTHY slot behind until the back-off allows a replacement; a parked worker
    // that dies served nobody and is just gone.
    if (crashed && w.phase !== 'parked' && this.live.get(id) === w) this.markUnhealthy(w, reason)
    else if (this.live.get(id) === w) this.live.delete(id)
    await store.workers.update(id, { state: crashed ? 'FAILED' : 'EXITED', stoppedAt: clock.now(), lastError: crashed ? reason : null })
    rmSync(join(this.deps.dataDir, 'workers', id, 'disk'), { recursive: true, force: true })
    for (const job of await store.jobs.listInProgress(id)) await loseJob(this.deps.lifecycle, job, id, reason, crashed)
    log[crashed ? 'warn' : 'info']({ workerId: id, endpointId: w.endpointId, exit: how }, crashed ? 'worker failed' : 'worker stopped')
  }

  private async startFailed(w: LiveWorker, reason: string, inserted: boolean): Promise<StartResult> {
    const { store, catalog, clock, log } = this.deps
    catalog.fleet.release(w.id)
    const stoppedAt = clock.now()
    if (inserted) await store.workers.update(w.id, { state: 'FAILED', stoppedAt, lastError: reason })
    else if (w.record) await store.workers.insert({ ...w.record, state: 'FAILED', stoppedAt, lastError: reason })
    if (w.phase === 'stopping') this.live.delete(w.id)
    else this.markUnhealthy(w, reason)
    log.warn({ workerId: w.id, endpointId: w.endpointId, reason }, 'worker failed to start')
    return { ok: false, capacity: false, reason }
  }

  private markUnhealthy(w: LiveWorker, reason: string): void {
    const backoffMs = this.backoff.failed(w.endpointId, reason)
    Object.assign(w, { phase: 'unhealthy', handle: null, lastError: reason, phaseSince: this.mono(), retiring: false })
    w.jobs.clear()
    this.deps.log.warn({ workerId: w.id, endpointId: w.endpointId, reason, failures: this.backoff.consecutive(w.endpointId), backoffMs }, 'worker unhealthy: replaced after the back-off')
  }
}

function hash(token: string): string {
  return createHash('sha256').update(token).digest('hex')
}
