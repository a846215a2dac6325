import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { CatalogService } from '../../catalog/CatalogService.js'
import type { ChangeFeed } from '../../replicas/ChangeFeed.js'
import type { WorkerList } from '../../contract/worker.js'
import type { Clock } from '../../domain/clock.js'
import type { EndpointRecord } from '../../domain/endpoints/endpoint.js'
import { notFound } from '../../domain/errors.js'
import { newId } from '../../domain/ids.js'
import { parkWindowMs, type WorkerSnapshot } from '../../domain/workers/planScaling.js'
import { LABELS } from '../../runtime/labels.js'
import type { ListedWorkload, RuntimeDriver, Workload, WorkloadExit, WorkloadSpec } from '../../runtime/RuntimeDriver.js'
import type { LbHealth } from '../../domain/workers/planLbScaling.js'
import type { WorkerLog } from '../../runtime/WorkerLog.js'
import { buildWorkerSpec } from '../../runtime/workerSpec.js'
import type { Store } from '../../store/Store.js'
import { CrashBackoff } from './CrashBackoff.js'
import type { JobEvents } from '../jobs/JobEvents.js'
import type { JobLifecycle } from '../jobs/JobLifecycle.js'
import type { JobsConfig } from '../jobs/jobsConfig.js'
import type { WorkerHealth } from '../jobs/JobService.js'
import { nextPhase, storedStateOf, type WorkerEvent, type WorkerPhase } from '../../domain/workers/workerState.js'
import { newLiveWorker, snapshotOf, type LiveWorker } from './LiveWorker.js'
import type { Log } from '../log.js'
import { lastOutput } from './lastOutput.js'
import type { Metrics } from '../Metrics.js'
import { loseJob } from '../jobs/loseJob.js'
import type { NetworkVolumeService } from '../storage/NetworkVolumeService.js'
import { WorkerLogArchive } from './WorkerLogArchive.js'
import { WorkerPlacer } from './WorkerPlacer.js'
import type { WorkerMeter } from '../billing/UsageMeter.js'
import { workerHealth, workerList, type WorkerListContext } from './workerList.js'
import { newWorkerRecord } from './workerRecord.js'
import { adoptableAllocation } from './adoptableAllocation.js'
import type { WorkerRecord } from '../../store/WorkerStore.js'
import { volumePath } from './volumePath.js'
import { describe, FleetView } from './FleetView.js'
import { lbAddress, lbWorkloadPorts } from '../loadBalancer/lbWorker.js'

export interface WorkerServiceDeps {
  store: Store
  clock: Clock
  runtime: RuntimeDriver
  catalog: CatalogService
  lifecycle: JobLifecycle
  events: JobEvents
  config: JobsConfig
  /** Where network volumes live on the host. */
  networkVolumes: Pick<NetworkVolumeService, 'pathOf'>
  /** Id of this installation: every workload is labelled with it. */
  installationId: string
  /**
   * Base URL of the control plane as workers on `hostId` reach it (read at each start: known only after
   * listen; '' while unknown).
   */
  baseUrl: (hostId: string) => string
  log: Log
  /** The runtime name of a host (`process`, `docker`), for the workers view. */
  runtimeOf?: (hostId: string) => string
  /** Credentials for an endpoint's private image (its `registry`), or null when it has none. */
  pullAuth?: (ep: EndpointRecord) => Promise<WorkloadSpec['pullAuth']>
  /** Monotonic ms for heartbeats, idle and parked times, crash back-off: process liveness is real time, whatever the business clock says. */
  monotonic?: () => number
  /** Billing: told when a worker starts serving (its first call, or unparked) and stops (parked, exited). */
  meter?: WorkerMeter
  /** Observes cold starts. */
  metrics?: Metrics
  /** How long a retiring load-balancing worker may keep requests and WebSockets before it is stopped anyway. */
  lbDrainMs?: number
  /**
   * Several control-plane processes: the leader owns the live workers and describes them to the others
   * (`worker.state`); a follower serves their protocol calls and sends what it sees to the leader.
   */
  feed?: ChangeFeed
}

/** Why an endpoint's waiting jobs wait, as the autoscaler sees it (see Autoscaler.waiting). */
export interface ScalingSignals {
  waiting(endpointId: string): Promise<WorkerListContext['waiting']>
}

/** The last health check of a load-balancing worker (see HealthPoller). */
export interface HealthReadings {
  health(workerId: string): LbHealth | undefined
}

/** Where a load-balancing worker serves HTTP (PORT) and answers health checks (PORT_HEALTH), as published by the runtime. */
export interface HttpAddress {
  host: string
  port: number
  healthPort: number
  /** HEALTH_CHECK_PATH, starting with `/`. */
  healthPath: string
}

/** A load-balancing worker as the balancer and the health checks see it. */
export interface HttpWorker {
  id: string
  endpointId: string
  /** 'ready' once a health check answered 200 (only those get traffic, unless parked or retiring). */
  phase: WorkerPhase
  retiring: boolean
  /** Requests in flight on it. */
  inFlight: number
  address: HttpAddress
}

/** Outcome of adding a worker; `capacity` tells "no room in the fleet" (it stays THROTTLED) from a broken worker. */
/** What a worker's job-take may do now; see `WorkerService.takeTurn`. */
export type TakeTurn = 'take' | 'hold' | 'drain'

export type StartResult = { ok: true; workerId: string } | { ok: false; capacity: boolean; reason: string }

/**
 * Serverless workers: placing them in the fleet, starting and stopping them through the RuntimeDriver,
 * parking them (FlashBoot), their protocol keys, heartbeats, crash back-off, and what happens to their
 * jobs when they die. Live state is in memory (see LiveWorker); the store keeps what a restart must know.
 *
 * Workers belong to the fleet, not to a process. With several control-plane processes only the leader holds
 * live workers (it starts, watches, parks, stops them; `lead()` then `recover()` adopts those of a leader
 * that died). The others (`follow()`) serve the worker protocol for any worker: keys and endpoints from the
 * store, phases (draining, parked, retiring) from the leader's `worker.state` broadcasts, jobs taken straight
 * from the store; signs of life, jobs taken and stopPod go to the leader through the change feed, so its
 * heartbeat checks and scaling decisions count calls made anywhere. A single process leads from the start.
 */
export class WorkerService {
  private readonly live = new Map<string, LiveWorker>()
  private readonly endedLogs: WorkerLogArchive
  private readonly backoff: CrashBackoff
  private readonly placer: WorkerPlacer
  private readonly mono: () => number
  /** HTTP addresses of load-balancing workers. */
  private readonly http = new Map<string, HttpAddress>()
  /** False on a follower: it holds no live worker and answers protocol calls through `view`. */
  private leading = true
  private readonly view: FleetView | null
  /** Workers handed to the next leader (`follow`): their exit, seen here, is not ours to act on. */
  private readonly detached = new WeakSet<LiveWorker>()
  private readonly described = new Set<LiveWorker>()
  private describeTimer: NodeJS.Timeout | null = null
  /** What the workers list shows from the parts that watch the workers (see `attach`). */
  private scaler: ScalingSignals | null = null
  private healthChecks: HealthReadings | null = null

  constructor(private readonly deps: WorkerServiceDeps) {
    this.mono = deps.monotonic ?? (() => performance.now())
    this.endedLogs = new WorkerLogArchive((id) => deps.runtime.logPath('worker', id))
    this.backoff = new CrashBackoff({ baseMs: deps.config.crashBackoffMs, maxMs: deps.config.crashBackoffMaxMs, now: this.mono })
    this.placer = new WorkerPlacer({ catalog: deps.catalog, parked: () => [...this.live.values()].filter((w) => w.phase === 'parked'), evict: (w, why) => void this.stop(w.id, why) })
    deps.events.onJobLeftWorker((workerId, jobId) => this.jobLeft(workerId, jobId))
    const feed = deps.feed
    this.view = feed ? new FleetView({ store: deps.store, feed, mono: this.mono }) : null
    if (feed) {
      // What followers saw of the leader's workers.
      feed.on('worker.contact', (id) => this.leading && this.contact(id))
      feed.on('worker.taken', (p) => {
        const [id, ...jobIds] = p.split(' ')
        if (this.leading) this.jobsTaken(id, jobIds)
      })
      feed.on('worker.recycle', (id) => this.leading && this.recycle(id))
    }
  }

  /**
   * Attaches the parts whose view the workers list shows: the autoscaler (why jobs wait) and the health checks
   * of load-balancing workers. Both are built on this service (they watch and drive its workers), so they
   * exist only after it: this is the one step that closes that loop, before the server listens.
   */
  attach(watchers: { scaler: ScalingSignals; health: HealthReadings }): void {
    this.scaler = watchers.scaler
    this.healthChecks = watchers.health
  }

  /** This process became the leader: its workers are the live ones (call `recover()` next to adopt the fleet's). */
  lead(): void {
    this.leading = true
    this.view?.clear()
    if (this.deps.feed && !this.describeTimer) {
      // Every live worker is described each second: a follower that started late, or missed a message, catches up.
      this.describeTimer = setInterval(() => {
        for (const w of this.live.values()) this.describe(w)
      }, 1000)
      this.describeTimer.unref()
    }
  }

  /**
   * This process is no longer the leader (or not yet): its live workers are forgotten, not stopped; they keep
   * running and the next leader adopts them. Their capacity is released here (the next leader restores it).
   */
  follow(): void {
    this.leading = false
    if (this.describeTimer) clearInterval(this.describeTimer)
    this.describeTimer = null
    for (const w of this.live.values()) {
      this.detached.add(w)
      this.deps.catalog.fleet.release(w.id)
    }
    this.live.clear()
    this.http.clear()
    this.described.clear()
  }

  /** Tells followers how a worker stands now (coalesced per turn of the event loop). */
  private describe(w: LiveWorker): void {
    const feed = this.deps.feed
    if (!feed || !this.leading || this.detached.has(w)) return
    if (this.described.size === 0) {
      setImmediate(() => {
        for (const d of this.described) feed.publish('worker.state', describe(d, this.live.get(d.id) !== d))
        this.described.clear()
      })
    }
    this.described.add(w)
  }

  /**
   * After a restart: adopts the workers of the previous run that still run and can still reach the control
   * plane (same URL), on their own capacity, for endpoints that still exist; removes the others and any
   * workload of this installation no record knows. Running jobs of every previous worker go back to the
   * queue (counted as retried): results posted while no control plane listened are lost, so a job runs
   * again rather than never ends. With `keepRunningJobs` (other processes served the protocol meanwhile, so
   * results were not lost) an adopted worker keeps its running jobs; only those of workers not adopted go back.
   */
  async recover(opts: { keepRunningJobs?: boolean } = {}): Promise<void> {
    const { store, runtime, clock, log } = this.deps
    const listed = new Map<string, ListedWorkload>()
    for (const l of await runtime.list({ [LABELS.installation]: this.deps.installationId, [LABELS.kind]: 'worker' })) listed.set(l.ref, l)
    for (const w of await store.workers.listActive()) {
      const found = w.runtimeRef ? listed.get(w.runtimeRef) : undefined
      if (w.runtimeRef) listed.delete(w.runtimeRef)
      if (found && (await this.adopt(w, found))) continue
      if (w.runtimeRef) await runtime.remove(w.runtimeRef).catch((err: Error) => log.warn({ workerId: w.id, err: err.message }, 'cannot remove a worker of the previous run'))
      await store.workers.update(w.id, { state: storedStateOf('exited'), stoppedAt: clock.now(), lastError: 'the control plane restarted' })
      log.info({ workerId: w.id, endpointId: w.endpointId, runtimeRef: w.runtimeRef }, 'worker of the previous run removed')
    }
    // Started by the previous run but never recorded as started (it crashed in between): not wanted.
    for (const l of listed.values()) await runtime.remove(l.ref).catch(() => undefined)
    for (const job of await store.jobs.listInProgress()) {
      const adopted = opts.keepRunningJobs && job.workerId ? this.live.get(job.workerId) : undefined
      if (adopted) adopted.jobs.add(job.id)
      else await loseJob(this.deps.lifecycle, job, job.workerId ?? '', opts.keepRunningJobs ? 'its worker was lost while the control plane changed leader' : 'the control plane restarted while it ran', true)
    }
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
    this.move(w, 'launch')
    w.timeline = { launch: this.mono(), pulled: null, started: null, called: null }
    w.startPhase = null
    w.pull = null
    const token = `hw_${randomBytes(24).toString('base64url')}`
    const now = clock.now()
    w.allocation = allocation
    w.record = newWorkerRecord(w.id, ep, allocation, hash(token), now)
    await store.workers.insert(w.record)
    let handle: Workload
    try {
      const spec = buildWorkerSpec({
        endpoint: ep,
        workerId: w.id,
        token,
        baseUrl: this.deps.baseUrl(allocation.hostId),
        installationId: this.deps.installationId,
        pingIntervalMs: this.deps.config.pingIntervalMs,
        allocation,
        volumePath: await volumePath(store, this.deps.networkVolumes, ep),
        pullAuth: ep.registry ? await this.deps.pullAuth?.(ep) : null,
      })
      if (ep.type === 'LOAD_BALANCER') spec.ports = lbWorkloadPorts(spec.ports, ep.env)
      const abort = new AbortController()
      w.abortStart = () => abort.abort()
      handle = await runtime.start(spec, {
        signal: abort.signal,
        onPhase: (phase, detail) => this.onStartPhase(w, phase, detail),
        // A cluster whose scheduler cannot place it yet: the workers view and the jobs' waiting reason say so.
        onWaiting: (why) => {
          w.waitingFor = why
          w.lastError = why
        },
      })
    } catch (err) {
      return this.startFailed(w, (err as Error).message, true)
    } finally {
      w.abortStart = null
    }
    if (ep.type === 'LOAD_BALANCER') {
      const address = lbAddress(handle.ports, ep.env)
      if (address) this.http.set(w.id, address)
      else log.warn({ workerId: w.id, endpointId: ep.id }, 'the runtime published no PORT for a load-balancing worker: it gets no traffic')
    }
    const m = this.mono()
    Object.assign(w, { handle, startedAt: m, lastContact: m, idleSince: m, phaseSince: m, lastError: null, startPhase: 'STARTING', pull: null, waitingFor: null })
    w.timeline.pulled ??= w.timeline.launch
    w.timeline.started = m
    this.watch(w, handle)
    w.record.startedAt = now
    w.record.runtimeRef = handle.ref
    await store.workers.update(w.id, { runtimeRef: handle.ref, startedAt: now })
    // Stopped while it was being started (endpoint deleted, shutdown): finish the job now.
    if (w.phase === 'stopping') void handle.stop(this.deps.config.stopGraceMs)
    log.info({ workerId: w.id, endpointId: ep.id, runtimeRef: handle.ref, host: allocation.hostId, gpu: allocation.gpuTypeId, cpu: allocation.cpuFlavorId }, 'worker started')
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
    if (this.move(w, 'stop')) {
      w.intentional = true
      this.deps.log.info({ workerId, endpointId: w.endpointId, reason }, 'stopping worker')
      this.deps.events.workerChanged(workerId)
      void this.deps.store.workers.update(workerId, { state: storedStateOf(w.phase) })
      // Still being started (a Pod the cluster cannot place yet): that start is called off.
      if (!w.handle) w.abortStart?.()
      void w.handle?.stop(this.deps.config.stopGraceMs)
    }
    await w.finished
  }

  /**
   * A host's runtime stopped answering: its workers are lost (their jobs requeued by the usual rules) without
   * waiting for a word from that runtime. The fleet places nothing there meanwhile (Fleet.setDown).
   */
  hostDown(hostId: string, reason: string): void {
    for (const w of this.live.values()) {
      if (w.allocation?.hostId !== hostId || !w.handle || !w.abandon) continue
      w.lostReason = `worker ${w.id} lost: host ${hostId} is down (${reason})`
      this.deps.log.warn({ workerId: w.id, endpointId: w.endpointId, hostId, reason }, 'worker lost with its host')
      if (this.move(w, 'lose')) this.deps.events.workerChanged(w.id)
      w.abandon({ code: null, signal: null, reason: w.lostReason })
    }
  }

  /**
   * A host answers again: workloads of this installation there that no live worker owns (lost while it was
   * down) are removed.
   */
  async reconcileHost(hostId: string): Promise<void> {
    const owned = new Set([...this.live.values()].map((w) => w.record?.runtimeRef).filter((r): r is string => !!r))
    for (const l of await this.deps.runtime.list({ [LABELS.installation]: this.deps.installationId, [LABELS.kind]: 'worker', [LABELS.host]: hostId })) {
      if (owned.has(l.ref)) continue
      await this.deps.runtime.remove(l.ref).catch(() => undefined)
      this.deps.log.info({ hostId, runtimeRef: l.ref }, 'removed a worker left on a host that was down')
    }
  }

  /**
   * Calls off the starts in progress (the control plane stops leading): a start the runtime keeps waiting on
   * (a Pod the cluster cannot place) must not hold up the scaler's last run. Those workers then fail to start.
   */
  cancelStarts(): void {
    for (const w of this.live.values()) w.abortStart?.()
  }

  /** Stops every worker (shutdown). */
  async stopAll(reason: string): Promise<void> {
    await Promise.all([...this.live.keys()].map((id) => this.stop(id, reason)))
  }

  /** FlashBoot: an idle worker keeps its process and capacity but takes no job and is not counted. */
  park(workerId: string, reason: string, priority: boolean): boolean {
    const w = this.live.get(workerId)
    if (!w || w.jobs.size > 0 || w.retiring || !this.move(w, 'park')) return false
    w.parkedPriority = priority
    this.deps.meter?.workerUnbillable(w)
    this.deps.log.info({ workerId, endpointId: w.endpointId, reason, priority }, 'worker parked')
    return true
  }

  /** Takes a parked worker back: its held job-take wakes and takes the waiting job at once. */
  unpark(workerId: string): boolean {
    const w = this.live.get(workerId)
    const parkedSince = w?.phaseSince ?? 0
    if (!w || !this.move(w, 'unpark')) return false
    w.idleSince = this.mono()
    this.deps.meter?.workerBillable(w)
    this.deps.log.info({ workerId, endpointId: w.endpointId, parkedMs: Math.round(w.idleSince - parkedSince) }, 'parked worker reused')
    this.deps.events.workerChanged(workerId)
    return true
  }

  /** Stops a worker once its running jobs end; it takes no new job meanwhile. */
  retire(workerId: string, reason: string): void {
    const w = this.live.get(workerId)
    if (!w) return
    if (!w.retiring) {
      this.deps.log.info({ workerId, endpointId: w.endpointId, reason }, 'worker retiring')
      // A load-balancing worker drains for at most lbDrainMs: an open WebSocket must not keep it forever
      // (any HTTP request that long was already answered 504).
      const drainMs = this.deps.lbDrainMs
      if (drainMs !== undefined && this.http.has(workerId)) {
        setTimeout(() => {
          if (this.live.get(workerId) === w && w.retiring) void this.stop(workerId, `still draining after ${drainMs} ms`)
        }, drainMs).unref()
      }
    }
    w.retiring = true
    this.describe(w)
    if (w.jobs.size === 0) void this.stop(workerId, reason)
  }

  /** The worker asked to be replaced (stopPod): stop it once its running jobs have ended. */
  recycle(workerId: string): void {
    if (!this.leading && this.view) return this.view.recycle(workerId)
    this.retire(workerId, 'the worker asked to be replaced (stopPod)')
  }

  /** True when `token` is the protocol key of live worker `workerId` of endpoint `endpointId`. */
  authenticate(endpointId: string, workerId: string, token: string | undefined): boolean | Promise<boolean> {
    if (!this.leading && this.view) return token ? this.view.authenticate(endpointId, workerId, token) : false
    const w = this.live.get(workerId)
    if (!w?.handle || !w.record || !token || w.endpointId !== endpointId) return false
    return timingSafeEqual(Buffer.from(w.record.tokenHash, 'hex'), Buffer.from(hash(token), 'hex'))
  }

  /** Any protocol call is a sign of life; the first one makes the worker ready. */
  contact(workerId: string): void {
    if (!this.leading && this.view) return this.view.contact(workerId)
    const w = this.live.get(workerId)
    if (w?.handle) this.touch(w)
  }

  private touch(w: LiveWorker): void {
    w.lastContact = this.mono()
    if (this.move(w, 'callIn')) {
      w.startPhase = null
      if (w.timeline && w.timeline.called === null) w.timeline.called = w.lastContact
      w.idleSince = w.lastContact
      const state = storedStateOf(w.phase)
      if (w.record) w.record.state = state
      this.deps.meter?.workerBillable(w)
      // From the record's creation (before the runtime was asked to start it): image pulls count too.
      if (w.record) this.deps.metrics?.workerReady(w.endpointId, this.deps.clock.now() - w.record.createdAt)
      void this.deps.store.workers.update(w.id, { state })
    }
  }

  /** True when the worker gets no more jobs and should not wait for one (it is being stopped, or unknown). */
  isDraining(workerId: string): boolean {
    if (!this.leading && this.view) return this.view.isDraining(workerId)
    const w = this.live.get(workerId)
    return !w?.handle || w.phase === 'stopping' || w.phase === 'unhealthy'
  }

  /**
   * One pass of a worker's job-take, answered in one look-up: it counts as contact (see `contact`), then
   * says whether the worker may take jobs now (`take`), must have its poll held without one (`hold`:
   * parked, or retiring after its jobs) or should stop asking (`drain`: being stopped, or unknown).
   */
  takeTurn(workerId: string): TakeTurn {
    if (!this.leading && this.view) {
      // A follower answers from the leader's broadcast (see FleetView) and passes the contact on.
      this.view.contact(workerId)
      return this.view.isDraining(workerId) ? 'drain' : this.view.isHeld(workerId) ? 'hold' : 'take'
    }
    const w = this.live.get(workerId)
    if (!w?.handle) return 'drain'
    this.touch(w)
    if (w.phase === 'stopping' || w.phase === 'unhealthy') return 'drain'
    return w.phase === 'parked' || w.retiring ? 'hold' : 'take'
  }

  /** Records jobs (or proxied requests) a worker took; a parked worker given one is active again. */
  jobsTaken(workerId: string, jobIds: string[]): void {
    if (!this.leading && this.view) return this.view.jobsTaken(workerId, jobIds)
    const w = this.live.get(workerId)
    if (!w) return
    for (const id of jobIds) w.jobs.add(id)
    // Parked while its take was completing: it runs a job, so it is active again.
    if (jobIds.length > 0 && this.move(w, 'unpark')) this.deps.meter?.workerBillable(w)
  }

  /** Gives up on workers silent for too long (heartbeats) or that never called in; their jobs are requeued. */
  checkLiveness(): void {
    const { pingIntervalMs, missedPings, workerStartTimeoutMs, healthyAfterMs } = this.deps.config
    const now = this.mono()
    for (const [id, w] of this.live) {
      if (!w.handle || (w.phase !== 'starting' && w.phase !== 'ready' && w.phase !== 'parked')) continue
      const silentFor = now - w.lastContact
      if (w.phase !== 'starting' && silentFor > pingIntervalMs * missedPings) w.lostReason = `worker ${id} sent no heartbeat for ${Math.round(silentFor)} ms (${missedPings} intervals of ${pingIntervalMs} ms)`
      else if (w.phase === 'starting' && now - w.startedAt > workerStartTimeoutMs) {
        const url = w.allocation ? this.deps.baseUrl(w.allocation.hostId) : null
        w.lostReason = `worker ${id} did not call in within ${workerStartTimeoutMs} ms of starting${url ? `: it cannot reach ${url}, or is not a worker (see its log)` : ''}`
      }
      else {
        if (w.phase === 'ready' && now - w.startedAt >= healthyAfterMs) this.backoff.healthy(w.endpointId)
        continue
      }
      this.deps.log.warn({ workerId: id, endpointId: w.endpointId, reason: w.lostReason }, 'worker lost')
      this.move(w, 'lose')
      this.deps.events.workerChanged(id)
      void w.handle.stop(0)
    }
  }

  /** Load-balancing workers with a process and an address (of one endpoint, or all). */
  httpWorkers(endpointId?: string): HttpWorker[] {
    const out: HttpWorker[] = []
    for (const w of this.live.values()) {
      const address = this.http.get(w.id)
      if (!address || !w.handle || (endpointId !== undefined && w.endpointId !== endpointId)) continue
      out.push({ id: w.id, endpointId: w.endpointId, phase: w.phase, retiring: w.retiring, inFlight: w.jobs.size, address })
    }
    return out
  }

  /**
   * A proxied request began on a load-balancing worker. Requests count like jobs: the worker is RUNNING
   * while it has any, idle time starts when the last ends, and a retiring worker stops after it (draining).
   */
  requestStarted(workerId: string, requestId: string): void {
    this.jobsTaken(workerId, [requestId])
  }

  /** A proxied request ended (however it ended). */
  requestEnded(workerId: string, requestId: string): void {
    this.jobLeft(workerId, requestId)
  }

  /**
   * Gives up on a worker that failed its health checks: it is stopped and counts as a crash (UNHEALTHY,
   * replaced after the crash back-off).
   */
  lose(workerId: string, reason: string): void {
    const w = this.live.get(workerId)
    if (!w?.handle || w.phase === 'stopping' || w.phase === 'unhealthy') return
    w.lostReason = reason
    this.move(w, 'lose')
    this.deps.log.warn({ workerId, endpointId: w.endpointId, reason }, 'worker lost')
    this.deps.events.workerChanged(workerId)
    void w.handle.stop(0)
  }

  /** Workers of an endpoint as the scaler sees them; `version` is the endpoint's current release. */
  snapshot(endpointId: string, version: number | null = null): WorkerSnapshot[] {
    const now = this.mono()
    return this.of(endpointId).map((w) => snapshotOf(w, now, version))
  }

  /** Endpoints that have live workers (of any phase). */
  endpointsWithWorkers(): string[] {
    const all = !this.leading && this.view ? this.view.workers() : [...this.live.values()]
    return [...new Set(all.map((w) => w.endpointId))]
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

  /** Why the endpoint's starting workers wait for their runtime to place them (Kubernetes: unschedulable), or null. */
  pendingCapacityReason(endpointId: string): string | null {
    return this.of(endpointId).filter((w) => w.phase === 'starting' && w.waitingFor).pop()?.waitingFor ?? null
  }

  /** /health worker counters. */
  health(endpointId: string): WorkerHealth {
    return workerHealth(this.of(endpointId))
  }

  /** GET /v2/serverless/{id}/workers: the workers of an endpoint the caller owns, and why jobs wait. */
  async list(accountId: string, endpointId: string): Promise<WorkerList> {
    const ep = await this.deps.store.endpoints.get(endpointId)
    if (!ep || ep.accountId !== accountId) throw notFound('endpoint', endpointId)
    return workerList(this.of(endpointId), {
      health: (workerId) => this.healthChecks?.health(workerId),
      endpointVersion: ep.version,
      now: this.deps.clock.now(),
      mono: this.mono(),
      backoffMs: this.backoff.remainingMs(endpointId),
      parkWindowMs: parkWindowMs(ep.flashboot, this.deps.config),
      waiting: (await this.scaler?.waiting(endpointId)) ?? { jobs: 0, lowPriorityJobs: 0, reason: null },
      runtimeOf: this.deps.runtimeOf,
      workerUrl: this.deps.baseUrl,
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

  /** The live workers of an endpoint; on a follower, the leader's as it last described them. */
  private of(endpointId: string): LiveWorker[] {
    if (!this.leading && this.view) return this.view.workers(endpointId)
    return [...this.live.values()].filter((w) => w.endpointId === endpointId)
  }

  private jobLeft(workerId: string, jobId: string): void {
    const w = this.live.get(workerId)
    if (!w?.jobs.delete(jobId)) return
    w.jobsDone++
    // A worker that saw a job through is healthy, whatever the job's outcome.
    this.backoff.healthy(w.endpointId)
    if (w.jobs.size > 0) return
    w.idleSince = this.mono()
    if (w.retiring) void this.stop(workerId, 'retired once its jobs ended')
  }

  private async onExit(w: LiveWorker, exit: WorkloadExit): Promise<void> {
    // Handed to the next leader (this process follows now): it watches the worker and acts on its exit.
    if (this.detached.has(w)) return
    const { store, catalog, clock, events, log } = this.deps
    const id = w.id
    this.http.delete(id)
    this.deps.meter?.workerUnbillable(w)
    catalog.fleet.release(id)
    events.forgetWorker(id)
    if (w.handle) this.endedLogs.remember(id, w.handle.logs)
    const how = exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`
    const crashed = !w.intentional
    const reason = w.lostReason ?? `worker ${id} exited (${exit.reason ?? how})`
    // The worker's own error says what it printed last (the cause, usually); jobs keep the short reason.
    const lastError = crashed && w.handle ? reason + lastOutput(w.handle.logs.history()) : reason
    // A crash leaves an UNHEALTHY slot behind until the back-off allows a replacement; a parked worker
    // that dies served nobody and is just gone.
    // One log line per exit: a crash that leaves an UNHEALTHY slot says so (with the exit), others below.
    const replaced = crashed && w.phase !== 'parked' && this.live.get(id) === w
    if (replaced) this.markUnhealthy(w, lastError, 'worker failed: replaced after the back-off', { exit: how })
    else if (this.live.get(id) === w) this.live.delete(id)
    this.describe(w)
    await store.workers.update(id, { state: storedStateOf(crashed ? 'failed' : 'exited'), stoppedAt: clock.now(), lastError: crashed ? lastError : null })
    // Its container disk is gone with it (the log stays for the logs API). A host that is down keeps it
    // until it answers again (see reconcileHost).
    if (w.record?.runtimeRef) await this.deps.runtime.remove(w.record.runtimeRef).catch((err: Error) => log.warn({ workerId: id, err: err.message }, 'cannot remove a stopped worker'))
    for (const job of await store.jobs.listInProgress(id)) await loseJob(this.deps.lifecycle, job, id, reason, crashed)
    if (!replaced) log[crashed ? 'warn' : 'info']({ workerId: id, endpointId: w.endpointId, exit: how }, crashed ? 'worker failed' : 'worker stopped')
  }

  /** Follows a started or adopted workload until it ends, or until its host is given up on. */
  private watch(w: LiveWorker, handle: Workload): void {
    const abandoned = new Promise<WorkloadExit>((resolve) => (w.abandon = resolve))
    w.finished = Promise.race([handle.exited, abandoned]).then((exit) => {
      w.abandon = null
      return this.onExit(w, exit)
    })
  }

  private onStartPhase(w: LiveWorker, phase: NonNullable<LiveWorker['startPhase']>, detail?: { bytes?: number; totalBytes?: number }): void {
    w.startPhase = phase
    if (phase === 'PULLING') w.pull = { bytes: detail?.bytes ?? 0, totalBytes: detail?.totalBytes || null }
    else if (w.timeline && w.timeline.pulled === null) w.timeline.pulled = this.mono()
  }

  /**
   * Takes back a worker of the previous run: it must still run, reach this control plane at the URL it was
   * given, belong to an existing endpoint, and get its own capacity back.
   */
  private async adopt(r: WorkerRecord, found: ListedWorkload): Promise<boolean> {
    const { store, catalog, runtime, log } = this.deps
    const allocation = adoptableAllocation(r, found, r.hostId ? this.deps.baseUrl(r.hostId) : '')
    const ep = allocation ? await store.endpoints.get(r.endpointId) : undefined
    if (!allocation || !ep || !catalog.fleet.restore(allocation)) return false
    const handle = await runtime.adopt(found.ref).catch(() => null)
    if (!handle) {
      catalog.fleet.release(r.id)
      return false
    }
    const m = this.mono()
    const w = newLiveWorker(r.id, r.endpointId, r.accountId, m)
    // It calls in again like a new worker: READY at its next protocol call (or lost after the start timeout).
    this.move(w, 'adopt')
    Object.assign(w, { record: { ...r, state: storedStateOf(w.phase) }, allocation, handle, startedAt: m, lastContact: m, idleSince: m, phaseSince: m, startPhase: 'STARTING' })
    this.live.set(w.id, w)
    // A load-balancing worker gets traffic again once its health checks pass.
    const address = ep.type === 'LOAD_BALANCER' ? lbAddress(handle.ports, ep.env) : null
    if (address) this.http.set(w.id, address)
    this.watch(w, handle)
    await store.workers.update(r.id, { state: w.record!.state })
    log.info({ workerId: r.id, endpointId: r.endpointId, runtimeRef: r.runtimeRef, hostId: r.hostId }, 'worker of the previous run adopted')
    return true
  }

  private async startFailed(w: LiveWorker, reason: string, inserted: boolean): Promise<StartResult> {
    const { store, catalog, clock, log } = this.deps
    catalog.fleet.release(w.id)
    this.http.delete(w.id)
    const stoppedAt = clock.now()
    const state = storedStateOf('failed')
    if (inserted) await store.workers.update(w.id, { state, stoppedAt, lastError: reason })
    else if (w.record) await store.workers.insert({ ...w.record, state, stoppedAt, lastError: reason })
    // Logged once: as a failed start that will be retried, or (stopping anyway) as a failed start.
    if (w.phase === 'stopping') {
      this.live.delete(w.id)
      log.warn({ workerId: w.id, endpointId: w.endpointId, reason }, 'worker failed to start')
    } else this.markUnhealthy(w, reason, 'worker failed to start: replaced after the back-off')
    return { ok: false, capacity: false, reason }
  }

  /** Moves a worker by the table of domain/workers/workerState.ts; false, and no change, where `event` does not apply. */
  private move(w: LiveWorker, event: WorkerEvent): boolean {
    const to = nextPhase(w.phase, event)
    if (to === null) return false
    w.phase = to
    w.phaseSince = this.mono()
    // Followers serve this worker's calls from the leader's broadcast of its phase.
    this.describe(w)
    return true
  }

  private markUnhealthy(w: LiveWorker, reason: string, message = 'worker unhealthy: replaced after the back-off', fields: object = {}): void {
    const backoffMs = this.backoff.failed(w.endpointId, reason)
    this.move(w, 'crash')
    Object.assign(w, { handle: null, lastError: reason, retiring: false })
    w.jobs.clear()
    this.deps.log.warn({ workerId: w.id, endpointId: w.endpointId, reason, failures: this.backoff.consecutive(w.endpointId), backoffMs, ...fields }, message)
  }
}

function hash(token: string): string {
  return createHash('sha256').update(token).digest('hex')
}
