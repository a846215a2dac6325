import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import type { CatalogService } from '../catalog/CatalogService.js'
import type { Worker, WorkerList } from '../contract/worker.js'
import { iso, type Clock } from '../domain/clock.js'
import type { EndpointRecord } from '../domain/endpoint.js'
import { notFound } from '../domain/errors.js'
import { newId } from '../domain/ids.js'
import { afterWorkerLoss, MAX_WORKER_LOSSES } from '../domain/jobState.js'
import { placementRequest } from '../domain/placement.js'
import type { WorkerSnapshot } from '../domain/planScaling.js'
import type { ImagesConfig } from '../runtime/images.js'
import type { RuntimeDriver, WorkerExit, WorkerHandle } from '../runtime/RuntimeDriver.js'
import { WorkerLog } from '../runtime/WorkerLog.js'
import { buildWorkerSpec } from '../runtime/workerSpec.js'
import type { Store } from '../store/Store.js'
import type { WorkerRecord } from '../store/WorkerStore.js'
import type { JobEvents } from './JobEvents.js'
import type { JobLifecycle } from './JobLifecycle.js'
import type { JobsConfig } from './jobsConfig.js'
import type { WorkerHealth } from './JobService.js'
import type { Log } from './log.js'

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
}

interface LiveWorker {
  record: WorkerRecord
  handle: WorkerHandle | null
  jobs: Set<string>
  contacted: boolean
  lastContact: number
  startedAt: number
  idleSince: number
  /** Asked to stop: takes answer nothing, the process is being stopped. */
  draining: boolean
  /** Intentional stop (idle, shutdown, stopPod): its exit is not a crash. */
  intentional: boolean
  /** Replace after its running jobs end (the worker posted stopPod). */
  recycle: boolean
  /** Set when the platform gave up on it (no heartbeat), for the record and its jobs' error. */
  lostReason: string | null
  finished: Promise<void>
}

/** Outcome of starting a worker; `capacity` tells "no room in the fleet" apart from a broken worker. */
export type StartResult = { ok: true; workerId: string } | { ok: false; capacity: boolean; reason: string }

/**
 * Serverless workers: placing them in the fleet, starting and stopping them through the RuntimeDriver,
 * their protocol keys, heartbeats, and what happens to their jobs when they die. Live state (which jobs a
 * worker runs, when it last called in) is in memory; the store keeps what a restart must know.
 */
export class WorkerService {
  private readonly live = new Map<string, LiveWorker>()
  private readonly endedLogs = new Map<string, WorkerLog>()
  private readonly failures = new Map<string, { consecutive: number; lastAt: number; reason: string }>()
  private readonly throttled = new Map<string, { count: number; reason: string }>()
  private readonly mono: () => number

  constructor(private readonly deps: WorkerServiceDeps) {
    this.mono = deps.monotonic ?? (() => performance.now())
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
    for (const job of await store.jobs.listInProgress()) await this.loseJob(job.id, job.retries, job.workerId ?? '', 'the control plane restarted while it ran', true)
  }

  /** Places and starts one worker of `ep`. */
  async start(ep: EndpointRecord): Promise<StartResult> {
    const { store, catalog, clock, runtime, log } = this.deps
    const id = newId()
    const allocation = catalog.fleet.reserve(id, placementRequest(ep, catalog.pools()))
    if ('reason' in allocation) return { ok: false, capacity: true, reason: allocation.reason }
    const token = `hw_${randomBytes(24).toString('base64url')}`
    const spec = buildWorkerSpec({
      endpoint: ep,
      workerId: id,
      token,
      baseUrl: this.deps.baseUrl(),
      images: this.deps.images,
      dataDir: this.deps.dataDir,
      pingIntervalMs: this.deps.config.pingIntervalMs,
      allocation,
      volumePath: await this.volumePath(ep),
      hostEnv: this.deps.hostEnv,
    })
    const now = clock.now()
    const record: WorkerRecord = {
      id,
      endpointId: ep.id,
      accountId: ep.accountId,
      state: 'STARTING',
      tokenHash: hash(token),
      version: ep.version,
      image: ep.image,
      gpuTypeId: allocation.gpuTypeId,
      gpuCount: allocation.gpuIndices.length,
      dataCenterId: allocation.dataCenterId,
      pid: null,
      pidMarker: null,
      createdAt: now,
      startedAt: null,
      stoppedAt: null,
      lastError: null,
    }
    if ('error' in spec) return this.startFailed(record, spec.error)
    await store.workers.insert(record)
    let handle: WorkerHandle
    try {
      handle = await runtime.start(spec)
    } catch (err) {
      return this.startFailed(record, (err as Error).message, true)
    }
    const m = this.mono()
    const w: LiveWorker = { record, handle, jobs: new Set(), contacted: false, lastContact: m, startedAt: m, idleSince: m, draining: false, intentional: false, recycle: false, lostReason: null, finished: Promise.resolve() }
    w.finished = handle.exited.then((exit) => this.onExit(w, exit))
    this.live.set(id, w)
    await store.workers.update(id, { pid: handle.pid, pidMarker: handle.pidMarker, startedAt: now })
    log.info({ workerId: id, endpointId: ep.id, pid: handle.pid, gpu: allocation.gpuTypeId, cpu: allocation.cpuFlavorId }, 'worker started')
    return { ok: true, workerId: id }
  }

  /** Stops a worker (SIGTERM, then SIGKILL after the grace period); its running jobs go back to the queue. */
  async stop(workerId: string, reason: string): Promise<void> {
    const w = this.live.get(workerId)
    if (!w) return
    if (!w.draining) {
      w.draining = true
      w.intentional = true
      this.deps.log.info({ workerId, endpointId: w.record.endpointId, reason }, 'stopping worker')
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

  /** True when `token` is the protocol key of live worker `workerId` of endpoint `endpointId`. */
  authenticate(endpointId: string, workerId: string, token: string | undefined): boolean {
    const w = this.live.get(workerId)
    if (!w || !token || w.record.endpointId !== endpointId) return false
    return timingSafeEqual(Buffer.from(w.record.tokenHash, 'hex'), Buffer.from(hash(token), 'hex'))
  }

  /** Any protocol call is a sign of life; the first one makes the worker ready. */
  contact(workerId: string): void {
    const w = this.live.get(workerId)
    if (!w) return
    w.lastContact = this.mono()
    if (!w.contacted) {
      w.contacted = true
      w.record.state = 'READY'
      this.failures.delete(w.record.endpointId)
      void this.deps.store.workers.update(workerId, { state: 'READY' })
    }
  }

  isDraining(workerId: string): boolean {
    return this.live.get(workerId)?.draining ?? true
  }

  jobsTaken(workerId: string, jobIds: string[]): void {
    const w = this.live.get(workerId)
    for (const id of jobIds) w?.jobs.add(id)
  }

  /** The worker asked to be replaced (stopPod): stop it once its running jobs have ended. */
  recycle(workerId: string): void {
    const w = this.live.get(workerId)
    if (!w) return
    w.recycle = true
    if (w.jobs.size === 0) void this.stop(workerId, 'the worker asked to be replaced (stopPod)')
  }

  /** Gives up on workers silent for too long (heartbeats) or that never called in; their jobs are requeued. */
  checkLiveness(): void {
    const { pingIntervalMs, missedPings, workerStartTimeoutMs } = this.deps.config
    const now = this.mono()
    for (const [id, w] of this.live) {
      if (w.draining) continue
      const silentFor = now - w.lastContact
      if (w.contacted && silentFor > pingIntervalMs * missedPings) w.lostReason = `worker ${id} sent no heartbeat for ${Math.round(silentFor)} ms (${missedPings} intervals of ${pingIntervalMs} ms)`
      else if (!w.contacted && now - w.startedAt > workerStartTimeoutMs) w.lostReason = `worker ${id} did not call in within ${workerStartTimeoutMs} ms of starting`
      else continue
      this.deps.log.warn({ workerId: id, endpointId: w.record.endpointId, reason: w.lostReason }, 'worker lost')
      w.draining = true
      this.deps.events.workerChanged(id)
      void w.handle?.stop(0)
    }
  }

  /** Live workers of an endpoint, for scaling decisions. */
  snapshot(endpointId: string): WorkerSnapshot[] {
    const now = this.mono()
    const out: WorkerSnapshot[] = []
    for (const w of this.live.values()) {
      if (w.record.endpointId !== endpointId) continue
      const state = w.draining ? 'stopping' : !w.contacted ? 'starting' : w.jobs.size > 0 ? 'running' : 'idle'
      out.push({ id: w.record.id, state, idleForMs: w.jobs.size > 0 ? 0 : now - w.idleSince })
    }
    return out
  }

  /** Endpoints that have live workers. */
  endpointsWithWorkers(): string[] {
    return [...new Set([...this.live.values()].map((w) => w.record.endpointId))]
  }

  /** Running workers of an endpoint (the rate limiter's dynamic limit). */
  runningCount(endpointId: string): number {
    return this.snapshot(endpointId).filter((w) => w.state === 'running' || w.state === 'idle').length
  }

  /** ms to wait before starting another worker of an endpoint whose workers keep failing (0 = go). */
  backoffMs(endpointId: string): number {
    const f = this.failures.get(endpointId)
    if (!f) return 0
    const delay = Math.min(60_000, 1_000 * 2 ** Math.min(6, f.consecutive - 1))
    return Math.max(0, f.lastAt + delay - this.mono())
  }

  /** The scaler reports how many workers it wanted but could not place, and why. */
  setThrottled(endpointId: string, count: number, reason = ''): void {
    if (count > 0) this.throttled.set(endpointId, { count, reason })
    else this.throttled.delete(endpointId)
  }

  /** /health worker counters. `ready` counts workers that called in (idle or running). */
  health(endpointId: string): WorkerHealth {
    const snap = this.snapshot(endpointId)
    const count = (s: WorkerSnapshot['state']) => snap.filter((w) => w.state === s).length
    const idle = count('idle')
    const running = count('running')
    return {
      idle,
      initializing: count('starting'),
      ready: idle + running,
      running,
      throttled: this.throttled.get(endpointId)?.count ?? 0,
      unhealthy: this.failures.get(endpointId)?.consecutive ?? 0,
    }
  }

  /** GET /v2/serverless/{id}/workers: the active workers of an endpoint the caller owns. */
  async list(accountId: string, endpointId: string): Promise<WorkerList> {
    const ep = (await this.deps.store.endpoints.get(endpointId)) as EndpointRecord | undefined
    if (!ep || ep.accountId !== accountId) throw notFound('endpoint', endpointId)
    const now = this.deps.clock.now()
    const status = { starting: 'INITIALIZING', idle: 'IDLE', running: 'RUNNING' } as const
    const workers: Worker[] = []
    for (const snap of this.snapshot(endpointId)) {
      if (snap.state === 'stopping') continue
      const r = this.live.get(snap.id)!.record
      workers.push({
        id: r.id,
        status: status[snap.state],
        isStale: r.version !== ep.version,
        gpuCount: r.gpuCount,
        version: r.version,
        image: r.image,
        uptimeSeconds: r.startedAt === null ? null : Math.max(0, Math.floor((now - r.startedAt) / 1000)),
        gpuTypeId: r.gpuTypeId,
        dataCenterId: r.dataCenterId,
        startedAt: r.startedAt === null ? null : iso(r.startedAt),
      })
    }
    const count = (s: Worker['status']) => workers.filter((w) => w.status === s).length
    const summary = { running: count('RUNNING'), idle: count('IDLE'), initializing: count('INITIALIZING'), throttled: count('THROTTLED'), unhealthy: count('UNHEALTHY'), total: workers.length }
    return { workers, summary, endpointVersion: ep.version }
  }

  /** Release versions of an endpoint's active workers (rollout numbers of its releases). */
  versions(endpointId: string): number[] {
    return [...this.live.values()].filter((w) => w.record.endpointId === endpointId && !w.draining).map((w) => w.record.version)
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
    return this.live.get(workerId)?.handle?.logs ?? this.endedLogs.get(workerId) ?? WorkerLog.fromFile(join(this.deps.dataDir, 'workers', workerId, 'worker.log'))
  }

  private jobLeft(workerId: string, jobId: string): void {
    const w = this.live.get(workerId)
    if (!w || !w.jobs.delete(jobId) || w.jobs.size > 0) return
    w.idleSince = this.mono()
    if (w.recycle) void this.stop(workerId, 'the worker asked to be replaced (stopPod)')
  }

  private async onExit(w: LiveWorker, exit: WorkerExit): Promise<void> {
    const { store, catalog, clock, events, log } = this.deps
    const id = w.record.id
    this.live.delete(id)
    catalog.fleet.release(id)
    events.forgetWorker(id)
    if (w.handle) this.remember(id, w.handle.logs)
    const how = exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`
    const crashed = !w.intentional
    const reason = w.lostReason ?? `worker ${id} exited (${how})`
    if (crashed) this.markFailure(w.record.endpointId, reason)
    await store.workers.update(id, { state: crashed ? 'FAILED' : 'EXITED', stoppedAt: clock.now(), lastError: crashed ? reason : null })
    rmSync(join(this.deps.dataDir, 'workers', id, 'disk'), { recursive: true, force: true })
    for (const job of await store.jobs.listInProgress(id)) await this.loseJob(job.id, job.retries, id, reason, crashed)
    log[crashed ? 'warn' : 'info']({ workerId: id, endpointId: w.record.endpointId, exit: how }, crashed ? 'worker failed' : 'worker stopped')
  }

  /** A running job whose worker is gone: back to the queue, or FAILED once it lost workers too often. */
  private async loseJob(jobId: string, retries: number, workerId: string, reason: string, counts: boolean): Promise<void> {
    const { lifecycle } = this.deps
    if (!counts) {
      await lifecycle.apply(jobId, 'requeue', { workerId: null, startedAt: null, progress: undefined }, workerId || undefined)
      return
    }
    if (afterWorkerLoss(retries) === 'requeue') {
      await lifecycle.apply(jobId, 'requeue', { workerId: null, startedAt: null, progress: undefined, retries: retries + 1 }, workerId || undefined)
    } else {
      await lifecycle.apply(jobId, 'fail', { retries: retries + 1, error: `the job lost its worker ${MAX_WORKER_LOSSES} times; last: ${reason}` }, workerId || undefined)
    }
  }

  private async startFailed(record: WorkerRecord, reason: string, inserted = false): Promise<StartResult> {
    const { store, catalog, clock, log } = this.deps
    catalog.fleet.release(record.id)
    const failed = { ...record, state: 'FAILED' as const, stoppedAt: clock.now(), lastError: reason }
    if (inserted) await store.workers.update(record.id, { state: 'FAILED', stoppedAt: failed.stoppedAt, lastError: reason })
    else await store.workers.insert(failed)
    this.markFailure(record.endpointId, reason)
    log.warn({ workerId: record.id, endpointId: record.endpointId, reason }, 'worker failed to start')
    return { ok: false, capacity: false, reason }
  }

  private markFailure(endpointId: string, reason: string): void {
    const f = this.failures.get(endpointId)
    this.failures.set(endpointId, { consecutive: (f?.consecutive ?? 0) + 1, lastAt: this.mono(), reason })
  }

  /** The last failure of an endpoint's workers, for users wondering why nothing runs. */
  lastFailure(endpointId: string): string | null {
    return this.failures.get(endpointId)?.reason ?? null
  }

  private remember(id: string, logs: WorkerLog): void {
    this.endedLogs.set(id, logs)
    if (this.endedLogs.size > 200) this.endedLogs.delete(this.endedLogs.keys().next().value!)
  }

  private async volumePath(ep: EndpointRecord): Promise<string | null> {
    const volumeId = ep.networkVolumes[0]
    if (!volumeId) return null
    const volume = (await this.deps.store.networkVolumes.get(volumeId)) as { dataCenter?: string } | undefined
    if (!volume?.dataCenter) return null
    const dir = join(this.deps.dataDir, 'volumes', volume.dataCenter, volumeId)
    mkdirSync(dir, { recursive: true })
    return dir
  }
}

function hash(token: string): string {
  return createHash('sha256').update(token).digest('hex')
}
