import { randomBytes } from 'node:crypto'
import type { Allocation } from '../../catalog/Fleet.js'
import type { EndpointRecord } from '../../domain/endpoints/endpoint.js'
import { newId } from '../../domain/ids.js'
import { nextPhase, storedStateOf, type WorkerEvent } from '../../domain/workers/workerState.js'
import type { Workload, WorkloadExit } from '../../runtime/RuntimeDriver.js'
import { buildWorkerSpec } from '../../runtime/workerSpec.js'
import type { WorkerRecord } from '../../store/WorkerStore.js'
import { loseJob } from '../jobs/loseJob.js'
import { lbAddress, lbWorkloadPorts } from '../loadBalancer/lbWorker.js'
import { lastOutput } from './lastOutput.js'
import { newLiveWorker, type LiveWorker } from './LiveWorker.js'
import type { WorkerContext } from './WorkerContext.js'
import { WorkerPlacer } from './WorkerPlacer.js'
import { newWorkerRecord, tokenHash } from './workerRecord.js'
import type { HttpAddress, StartResult } from './types.js'
import { volumePath } from './volumePath.js'

/**
 * The lifecycle of this process's live workers (the leader's): placing and starting them, their phase moves
 * (the one place a worker's phase changes and its stored `state` is derived, by `storedStateOf`), signs of
 * life and heartbeats, parking, retiring, stopping, and what happens to a worker and its jobs when it exits.
 */
/** The first wait before a failed stop is tried again, doubled each time up to the most. */
const STOP_RETRY_MS = 1_000
const STOP_RETRY_MAX_MS = 30_000

export class WorkerLifecycle {
  private readonly placer: WorkerPlacer
  /** Every watched worker's end (its exit recorded, its jobs given back), until it is done. */
  private readonly ending = new Set<Promise<void>>()

  constructor(private readonly ctx: WorkerContext) {
    const { deps, live } = ctx
    this.placer = new WorkerPlacer({
      fleet: deps.catalog.fleet,
      pools: () => deps.catalog.pools(),
      parked: () => [...live.values()].filter((w) => w.phase === 'parked'),
      evict: (w, why) => void this.stop(w.id, why),
      share: deps.share && {
        standings: (ids) => deps.share!.standings(ids),
        placed: () => [...live.values()].filter((w) => w.allocation !== null && w.phase !== 'parked'),
        retire: (w, why) => this.retire(w.id, why),
        waiting: (id) => live.get(id)?.phase === 'throttled',
      },
    })
  }

  /** Adds a worker to `ep`: placed and started when capacity allows, else kept THROTTLED until it fits. */
  async start(ep: EndpointRecord): Promise<StartResult> {
    const w = newLiveWorker(newId(), ep.id, ep.accountId, this.ctx.mono())
    this.ctx.live.set(w.id, w)
    return this.launch(w, ep)
  }

  /** Tries again to place a THROTTLED worker. */
  async place(workerId: string, ep: EndpointRecord): Promise<StartResult> {
    const w = this.ctx.live.get(workerId)
    if (w?.phase !== 'throttled')
      return { ok: false, capacity: false, reason: `worker ${workerId} is not waiting for capacity` }
    return this.launch(w, ep)
  }

  /** An UNHEALTHY worker's back-off is over: a fresh worker takes its place. */
  async replace(workerId: string, ep: EndpointRecord): Promise<StartResult> {
    if (this.ctx.live.get(workerId)?.phase !== 'unhealthy')
      return { ok: false, capacity: false, reason: `worker ${workerId} is not unhealthy` }
    this.ctx.live.delete(workerId)
    return this.start(ep)
  }

  private async launch(w: LiveWorker, ep: EndpointRecord): Promise<StartResult> {
    const { deps, mono } = this.ctx
    const { store, clock, runtime, log } = deps
    const allocation = this.placer.reserve(w.id, ep)
    if ('reason' in allocation) {
      if (w.lastError !== allocation.reason)
        log.warn({ workerId: w.id, endpointId: ep.id, reason: allocation.reason }, 'no capacity for a worker')
      w.lastError = allocation.reason
      return { ok: false, capacity: true, reason: allocation.reason }
    }
    this.move(w, 'launch')
    w.timeline = { launch: mono(), pulled: null, started: null, called: null }
    w.startPhase = null
    w.pull = null
    const token = `hw_${randomBytes(24).toString('base64url')}`
    const now = clock.now()
    w.allocation = allocation
    w.record = newWorkerRecord(w.id, ep, allocation, tokenHash(token), now)
    await store.workers.insert(w.record)
    let handle: Workload
    try {
      const spec = buildWorkerSpec({
        endpoint: ep,
        workerId: w.id,
        token,
        baseUrl: deps.baseUrl(allocation.hostId),
        installationId: deps.installationId,
        pingIntervalMs: deps.config.pingIntervalMs,
        allocation,
        volumePath: await volumePath(store, deps.networkVolumes, ep),
        pullAuth: ep.registry ? await deps.pullAuth?.(ep) : null,
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
      if (address) this.ctx.http.set(w.id, address)
      else
        log.warn(
          { workerId: w.id, endpointId: ep.id },
          'the runtime published no PORT for a load-balancing worker: it gets no traffic',
        )
    }
    const m = mono()
    Object.assign(w, {
      handle,
      startedAt: m,
      lastContact: m,
      idleSince: m,
      phaseSince: m,
      lastError: null,
      startPhase: 'STARTING',
      pull: null,
      waitingFor: null,
    })
    w.timeline.pulled ??= w.timeline.launch
    w.timeline.started = m
    this.watch(w, handle)
    w.record.startedAt = now
    w.record.runtimeRef = handle.ref
    await store.workers.update(w.id, { runtimeRef: handle.ref, startedAt: now })
    // Stopped while it was being started (endpoint deleted, shutdown): finish the job now.
    if (w.phase === 'stopping') this.halt(w, handle, deps.config.stopGraceMs)
    log.info(
      {
        workerId: w.id,
        endpointId: ep.id,
        runtimeRef: handle.ref,
        host: allocation.hostId,
        gpu: allocation.gpuTypeId,
        cpu: allocation.cpuFlavorId,
      },
      'worker started',
    )
    return { ok: true, workerId: w.id }
  }

  /**
   * Takes back a running workload of the previous run as a live worker (see WorkerRecovery.adopt), on the
   * allocation it was given back.
   */
  async takeBack(
    r: WorkerRecord,
    allocation: Allocation,
    handle: Workload,
    address: HttpAddress | null,
  ): Promise<void> {
    const m = this.ctx.mono()
    const w = newLiveWorker(r.id, r.endpointId, r.accountId, m)
    // It calls in again like a new worker: READY at its next protocol call (or lost after the start timeout).
    this.move(w, 'adopt')
    Object.assign(w, {
      record: { ...r, state: storedStateOf(w.phase) },
      allocation,
      handle,
      startedAt: m,
      lastContact: m,
      idleSince: m,
      phaseSince: m,
      startPhase: 'STARTING',
    })
    this.ctx.live.set(w.id, w)
    // A load-balancing worker gets traffic again once its health checks pass.
    if (address) this.ctx.http.set(w.id, address)
    this.watch(w, handle)
    await this.ctx.deps.store.workers.update(r.id, { state: w.record!.state })
  }

  /** Records that a worker ended (`exited`: stopped or removed; `failed`: crashed). */
  recordEnded(workerId: string, end: 'exited' | 'failed', lastError: string | null): Promise<void> {
    return this.ctx.deps.store.workers.update(workerId, {
      state: storedStateOf(end),
      stoppedAt: this.ctx.deps.clock.now(),
      lastError,
    })
  }

  /**
   * Stops a worker (SIGTERM, then SIGKILL after the grace period); its running jobs go back to the
   * queue. A THROTTLED or UNHEALTHY worker has no process: it is simply forgotten.
   */
  async stop(workerId: string, reason: string): Promise<void> {
    const { deps, live } = this.ctx
    const w = live.get(workerId)
    if (!w) return
    if (w.phase === 'throttled' || w.phase === 'unhealthy') {
      live.delete(workerId)
      deps.log.info({ workerId, endpointId: w.endpointId, reason }, `${w.phase} worker dropped`)
      return
    }
    if (this.move(w, 'stop')) {
      w.intentional = true
      deps.log.info({ workerId, endpointId: w.endpointId, reason }, 'stopping worker')
      deps.events.workerChanged(workerId)
      void deps.store.workers.update(workerId, { state: storedStateOf(w.phase) })
      // Still being started (a Pod the cluster cannot place yet): that start is called off.
      if (!w.handle) w.abortStart?.()
      if (w.handle) this.halt(w, w.handle, deps.config.stopGraceMs)
    }
    await w.finished
  }

  /**
   * Asks the runtime to end a worker's workload, and again after a failure (a Pod DELETE the API server reset,
   * an engine that did not answer) until the workload has exited: a failed stop is logged, never thrown (it must
   * not end the control plane), and the worker stays `stopping` meanwhile.
   */
  private halt(w: LiveWorker, handle: Workload, graceMs: number, attempt = 1): void {
    let exited = false
    void handle.exited.then(() => {
      exited = true
    })
    handle.stop(graceMs).catch((err: Error) => {
      if (exited) return
      const retryMs = Math.min(STOP_RETRY_MS * 2 ** (attempt - 1), STOP_RETRY_MAX_MS)
      this.ctx.deps.log.warn(
        { workerId: w.id, endpointId: w.endpointId, err: err.message, attempt, retryMs },
        'stopping a worker failed: trying again',
      )
      setTimeout(() => {
        if (!exited) this.halt(w, handle, graceMs, attempt + 1)
      }, retryMs).unref()
    })
  }

  /** Stops every worker (shutdown). */
  async stopAll(reason: string): Promise<void> {
    await Promise.all([...this.ctx.live.keys()].map((id) => this.stop(id, reason)))
    // Workers that ended just before (a deleted endpoint's) leave \`live\` at once but still record their
    // end and give their jobs back: the store must outlive that.
    await Promise.allSettled(this.ending)
  }

  /**
   * This process no longer leads: its live workers are forgotten, not stopped; they keep running and the next
   * leader adopts them. Their capacity is released here (the next leader restores it).
   */
  handOver(): void {
    const { deps, live, http, detached } = this.ctx
    for (const w of live.values()) {
      detached.add(w)
      deps.catalog.fleet.release(w.id)
    }
    live.clear()
    http.clear()
  }

  /** FlashBoot: an idle worker keeps its process and capacity but takes no job and is not counted. */
  park(workerId: string, reason: string, priority: boolean): boolean {
    const w = this.ctx.live.get(workerId)
    if (!w || w.jobs.size > 0 || w.retiring || !this.move(w, 'park')) return false
    w.parkedPriority = priority
    this.ctx.deps.meter?.workerUnbillable(w)
    this.ctx.deps.log.info({ workerId, endpointId: w.endpointId, reason, priority }, 'worker parked')
    return true
  }

  /** Takes a parked worker back: its held job-take wakes and takes the waiting job at once. */
  unpark(workerId: string): boolean {
    const { deps } = this.ctx
    const w = this.ctx.live.get(workerId)
    const parkedSince = w?.phaseSince ?? 0
    if (!w || !this.move(w, 'unpark')) return false
    w.idleSince = this.ctx.mono()
    deps.meter?.workerBillable(w)
    deps.log.info(
      { workerId, endpointId: w.endpointId, parkedMs: Math.round(w.idleSince - parkedSince) },
      'parked worker reused',
    )
    deps.events.workerChanged(workerId)
    return true
  }

  /** Stops a worker once its running jobs end; it takes no new job meanwhile. */
  retire(workerId: string, reason: string): void {
    const { deps, live, http } = this.ctx
    const w = live.get(workerId)
    if (!w) return
    if (!w.retiring) {
      deps.log.info({ workerId, endpointId: w.endpointId, reason }, 'worker retiring')
      // A load-balancing worker drains for at most lbDrainMs: an open WebSocket must not keep it forever
      // (any HTTP request that long was already answered 504).
      const drainMs = deps.lbDrainMs
      if (drainMs !== undefined && http.has(workerId)) {
        setTimeout(() => {
          if (live.get(workerId) === w && w.retiring) void this.stop(workerId, `still draining after ${drainMs} ms`)
        }, drainMs).unref()
      }
    }
    w.retiring = true
    this.ctx.describe(w)
    if (w.jobs.size === 0) void this.stop(workerId, reason)
  }

  /** A protocol call of a live worker: a sign of life; the first one makes the worker ready. */
  touch(w: LiveWorker): void {
    const { deps } = this.ctx
    w.lastContact = this.ctx.mono()
    if (this.move(w, 'callIn')) {
      w.startPhase = null
      if (w.timeline && w.timeline.called === null) w.timeline.called = w.lastContact
      w.idleSince = w.lastContact
      const state = storedStateOf(w.phase)
      if (w.record) w.record.state = state
      deps.meter?.workerBillable(w)
      // From the record's creation (before the runtime was asked to start it): image pulls count too.
      if (w.record) deps.metrics?.workerReady(w.endpointId, deps.clock.now() - w.record.createdAt)
      void deps.store.workers.update(w.id, { state })
    }
  }

  /** Records jobs (or proxied requests) a worker took; a parked worker given one is active again. */
  jobsTaken(workerId: string, jobIds: string[]): void {
    const w = this.ctx.live.get(workerId)
    if (!w) return
    for (const id of jobIds) w.jobs.add(id)
    // Parked while its take was completing: it runs a job, so it is active again.
    if (jobIds.length > 0 && this.move(w, 'unpark')) this.ctx.deps.meter?.workerBillable(w)
  }

  /** A job (or proxied request) left a worker, however it ended. */
  jobLeft(workerId: string, jobId: string): void {
    const w = this.ctx.live.get(workerId)
    if (!w?.jobs.delete(jobId)) return
    w.jobsDone++
    // A worker that saw a job through is healthy, whatever the job's outcome.
    this.ctx.backoff.healthy(w.endpointId)
    if (w.jobs.size > 0) return
    w.idleSince = this.ctx.mono()
    if (w.retiring) void this.stop(workerId, 'retired once its jobs ended')
  }

  /** Gives up on workers silent for too long (heartbeats) or that never called in; their jobs are requeued. */
  checkLiveness(): void {
    const { deps } = this.ctx
    const { pingIntervalMs, missedPings, workerStartTimeoutMs, healthyAfterMs } = deps.config
    const now = this.ctx.mono()
    for (const [id, w] of this.ctx.live) {
      if (!w.handle || (w.phase !== 'starting' && w.phase !== 'ready' && w.phase !== 'parked')) continue
      const silentFor = now - w.lastContact
      if (w.phase !== 'starting' && silentFor > pingIntervalMs * missedPings)
        w.lostReason = `worker ${id} sent no heartbeat for ${Math.round(silentFor)} ms (${missedPings} intervals of ${pingIntervalMs} ms)`
      else if (w.phase === 'starting' && now - w.startedAt > workerStartTimeoutMs) {
        const url = w.allocation ? deps.baseUrl(w.allocation.hostId) : null
        w.lostReason = `worker ${id} did not call in within ${workerStartTimeoutMs} ms of starting${url ? `: it cannot reach ${url}, or is not a worker (see its log)` : ''}`
      } else {
        if (w.phase === 'ready' && now - w.startedAt >= healthyAfterMs) this.ctx.backoff.healthy(w.endpointId)
        continue
      }
      deps.log.warn({ workerId: id, endpointId: w.endpointId, reason: w.lostReason }, 'worker lost')
      this.move(w, 'lose')
      deps.events.workerChanged(id)
      this.halt(w, w.handle, 0)
    }
  }

  /**
   * Gives up on a worker that failed its health checks: it is stopped and counts as a crash (UNHEALTHY,
   * replaced after the crash back-off).
   */
  lose(workerId: string, reason: string): void {
    const w = this.ctx.live.get(workerId)
    if (!w?.handle || w.phase === 'stopping' || w.phase === 'unhealthy') return
    w.lostReason = reason
    this.move(w, 'lose')
    this.ctx.deps.log.warn({ workerId, endpointId: w.endpointId, reason }, 'worker lost')
    this.ctx.deps.events.workerChanged(workerId)
    this.halt(w, w.handle, 0)
  }

  /**
   * Gives up on a worker whose host stopped answering (see WorkerRecovery.hostDown): its watch ends now as if it
   * had exited with `reason`, so its jobs are requeued by the usual rules, without a word from that host's runtime.
   * False where it has no workload being watched.
   */
  abandon(w: LiveWorker, reason: string): boolean {
    if (!w.handle || !w.abandon) return false
    w.lostReason = reason
    if (this.move(w, 'lose')) this.ctx.deps.events.workerChanged(w.id)
    w.abandon({ code: null, signal: null, reason })
    return true
  }

  /**
   * Moves a worker by the table of domain/workers/workerState.ts; false, and no change, where `event` does not
   * apply. The one writer of a live worker's phase: private, so every move goes through a named step above.
   */
  private move(w: LiveWorker, event: WorkerEvent): boolean {
    const to = nextPhase(w.phase, event)
    if (to === null) return false
    w.phase = to
    w.phaseSince = this.ctx.mono()
    // Followers serve this worker's calls from the leader's broadcast of its phase.
    this.ctx.describe(w)
    return true
  }

  private async onExit(w: LiveWorker, exit: WorkloadExit): Promise<void> {
    const { deps, live } = this.ctx
    // Handed to the next leader (this process follows now): it watches the worker and acts on its exit.
    if (this.ctx.detached.has(w)) return
    const { store, catalog, events, log } = deps
    const id = w.id
    this.ctx.http.delete(id)
    deps.meter?.workerUnbillable(w)
    catalog.fleet.release(id)
    events.forgetWorker(id)
    if (w.handle) this.ctx.endedLogs.remember(id, w.handle.logs)
    const how = exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`
    const crashed = !w.intentional
    const reason = w.lostReason ?? `worker ${id} exited (${exit.reason ?? how})`
    // The worker's own error says what it printed last (the cause, usually); jobs keep the short reason.
    const lastError = crashed && w.handle ? reason + lastOutput(w.handle.logs.history()) : reason
    // A crash leaves an UNHEALTHY slot behind until the back-off allows a replacement; a parked worker
    // that dies served nobody and is just gone.
    // One log line per exit: a crash that leaves an UNHEALTHY slot says so (with the exit), others below.
    const replaced = crashed && w.phase !== 'parked' && live.get(id) === w
    if (replaced) this.markUnhealthy(w, lastError, 'worker failed: replaced after the back-off', { exit: how })
    else if (live.get(id) === w) live.delete(id)
    this.ctx.describe(w)
    await this.recordEnded(id, crashed ? 'failed' : 'exited', crashed ? lastError : null)
    // Its container disk is gone with it (the log stays for the logs API). A host that is down keeps it
    // until it answers again (see reconcileHost).
    if (w.record?.runtimeRef)
      await deps.runtime
        .remove(w.record.runtimeRef)
        .catch((err: Error) => log.warn({ workerId: id, err: err.message }, 'cannot remove a stopped worker'))
    for (const job of await store.jobs.listInProgress(id))
      await loseJob(deps.lifecycle, job, { workerId: id, reason, counts: crashed })
    if (!replaced)
      log[crashed ? 'warn' : 'info'](
        { workerId: id, endpointId: w.endpointId, exit: how },
        crashed ? 'worker failed' : 'worker stopped',
      )
  }

  /** Follows a started or adopted workload until it ends, or until its host is given up on. */
  private watch(w: LiveWorker, handle: Workload): void {
    const abandoned = new Promise<WorkloadExit>((resolve) => (w.abandon = resolve))
    const finished = Promise.race([handle.exited, abandoned]).then((exit) => {
      w.abandon = null
      return this.onExit(w, exit)
    })
    w.finished = finished
    this.ending.add(finished)
    const settled = () => this.ending.delete(finished)
    finished.then(settled, settled)
  }

  private onStartPhase(
    w: LiveWorker,
    phase: NonNullable<LiveWorker['startPhase']>,
    detail?: { bytes?: number; totalBytes?: number },
  ): void {
    w.startPhase = phase
    if (phase === 'PULLING') w.pull = { bytes: detail?.bytes ?? 0, totalBytes: detail?.totalBytes || null }
    else if (w.timeline && w.timeline.pulled === null) w.timeline.pulled = this.ctx.mono()
  }

  private async startFailed(w: LiveWorker, reason: string, inserted: boolean): Promise<StartResult> {
    const { store, catalog, clock, log } = this.ctx.deps
    catalog.fleet.release(w.id)
    this.ctx.http.delete(w.id)
    const stoppedAt = clock.now()
    const state = storedStateOf('failed')
    if (inserted) await store.workers.update(w.id, { state, stoppedAt, lastError: reason })
    else if (w.record) await store.workers.insert({ ...w.record, state, stoppedAt, lastError: reason })
    // Logged once: as a failed start that will be retried, or (stopping anyway) as a failed start.
    if (w.phase === 'stopping') {
      this.ctx.live.delete(w.id)
      log.warn({ workerId: w.id, endpointId: w.endpointId, reason }, 'worker failed to start')
    } else this.markUnhealthy(w, reason, 'worker failed to start: replaced after the back-off')
    return { ok: false, capacity: false, reason }
  }

  private markUnhealthy(
    w: LiveWorker,
    reason: string,
    message = 'worker unhealthy: replaced after the back-off',
    fields: object = {},
  ): void {
    const { backoff, deps } = this.ctx
    const backoffMs = backoff.failed(w.endpointId, reason)
    this.move(w, 'crash')
    Object.assign(w, { handle: null, lastError: reason, retiring: false })
    w.jobs.clear()
    deps.log.warn(
      {
        workerId: w.id,
        endpointId: w.endpointId,
        reason,
        failures: backoff.consecutive(w.endpointId),
        backoffMs,
        ...fields,
      },
      message,
    )
  }
}
