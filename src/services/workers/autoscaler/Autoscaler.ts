import type { WaitingReason } from '../../../contract/worker.js'
import type { Clock } from '../../../domain/clock.js'
import type { EndpointRecord } from '../../../domain/endpoints/endpoint.js'
import {
  parkWindowMs,
  planScaling,
  unparkForJob,
  type EndpointScaling,
  type ScaleAction,
  type ScalingDecision,
  type ScalingPolicy,
  type WorkerSnapshot,
} from '../../../domain/workers/planScaling.js'
import { lbEndpointScaling, type LbDemand } from '../../../domain/workers/planLbScaling.js'
import {
  BURST_WINDOW_MS,
  recordSample,
  relativeHistory,
  type TimedSample,
} from '../../../domain/workers/scalingHistory.js'
import { dropsReason, waitingReason } from '../../../domain/jobs/waitingReason.js'
import { DROP_WINDOW_MS, type DroppedTakes } from '../../jobs/DroppedTakes.js'
import type { JobEvents } from '../../jobs/JobEvents.js'
import type { JobsConfig } from '../../jobs/jobsConfig.js'
import type { Log } from '../../log.js'
import type { StartResult } from '../types.js'
import type { Store } from '../../../store/Store.js'

export interface AutoscalerOptions {
  store: Store
  workers: ScaledWorkers
  events: JobEvents
  log: Log
  /** Business time: how long jobs have waited is measured against their submission time. */
  clock: Clock
  /** scaleIntervalMs (how often decisions run, also on every submission), the REQUEST_COUNT cool-down, FlashBoot windows. */
  config: Pick<
    JobsConfig,
    'scaleIntervalMs' | 'requestCountIdleTimeoutMs' | 'flashbootWindowMs' | 'priorityFlashbootWindowMs'
  >
  /** Monotonic ms for the demand history. */
  monotonic?: () => number
  /** Requests of LOAD_BALANCER endpoints (waiting and in flight): their demand, scaled by planLbScaling's rule. */
  loadBalancer?: BalancerDemand
  /** Jobs requeued because their worker never acknowledged them: reported first by why-waiting once it repeats. */
  dropped?: DroppedTakes
  /** Fair share (issue 36): the order accounts get scarce GPUs in; their endpoints decide, and place, first. */
  share?: { order(accountIds: Iterable<string>): string[] }
}

/** What the scaler reads of an endpoint's workers and does to them (see WorkerService). */
export interface ScaledWorkers {
  /** The endpoint's workers as planScaling sees them; `version` is its current release. */
  snapshot(endpointId: string, version: number | null): WorkerSnapshot[]
  /** Endpoints that have workers (of any phase): each gets a decision. */
  endpointsWithWorkers(): string[]
  /** ms before another worker of the endpoint may start, after its workers failed (0 = go). */
  backoffMs(endpointId: string): number
  /** Consecutive failures of the endpoint's workers and the last one, for why-waiting. */
  failures(endpointId: string): { consecutive: number; last: string | null }
  /** Why the endpoint's throttled workers cannot be placed, or null. */
  noCapacityReason(endpointId: string): string | null
  /** Why the endpoint's starting workers wait for their runtime to place them, or null. */
  pendingCapacityReason(endpointId: string): string | null
  /** Adds a worker: placed and started when capacity allows, else kept THROTTLED. */
  start(ep: EndpointRecord): Promise<StartResult>
  /** Tries again to place a THROTTLED worker. */
  place(workerId: string, ep: EndpointRecord): Promise<StartResult>
  /** Puts a fresh worker in the place of an UNHEALTHY one whose back-off is over. */
  replace(workerId: string, ep: EndpointRecord): Promise<StartResult>
  /** Stops a worker; its running jobs go back to the queue. Settles once it has ended. */
  stop(workerId: string, reason: string): Promise<void>
  /** Stops a worker once its running jobs end. */
  retire(workerId: string, reason: string): void
  /** FlashBoot: keeps an idle worker's process but takes it out of service; false where it cannot be parked. */
  park(workerId: string, reason: string, priority: boolean): boolean
  /** Takes a parked worker back; false where it was not parked. */
  unpark(workerId: string): boolean
}

/** What the scaler reads from the load balancer (see LoadBalancer). */
export interface BalancerDemand {
  /** Waiting and in-flight requests of an endpoint. */
  demand(endpointId: string): LbDemand
  /** Endpoints with requests waiting or in flight. */
  busyEndpoints(): string[]
  /** Calls `listener` when a request starts waiting for a worker (a cold start); returns the unsubscribe. */
  onWaiting(listener: (endpointId: string) => void): () => void
}

/** Waiting jobs of an endpoint and why they wait, for the workers list. */
export interface WaitingView {
  jobs: number
  lowPriorityJobs: number
  reason: WaitingReason | null
}

/** The least time from the start of one run to the start of a rerun requested during it. */
const RERUN_GAP_MS = 50

/**
 * The loop around planScaling: snapshot -> plan -> apply through the WorkerService, per queue endpoint.
 * Runs every `scaleIntervalMs` and right after a job is queued; runs never overlap (a request during a
 * run triggers one more run after it, RERUN_GAP_MS after its start at the soonest). Keeps each endpoint's recent demand (the policy's history) and
 * its last snapshot, from which it explains why waiting jobs wait.
 */
export class Autoscaler {
  private timer: NodeJS.Timeout | undefined
  private unsubscribe: Array<() => void> = []
  private running: Promise<void> | undefined
  private again = false
  private stopped = false
  private readonly history = new Map<string, TimedSample[]>()
  private readonly last = new Map<string, { snapshot: EndpointScaling; version: number | null }>()
  /** The worker count each endpoint's last logged decision aimed at. */
  private readonly loggedDesired = new Map<string, number>()
  private readonly mono: () => number

  constructor(private readonly o: AutoscalerOptions) {
    this.mono = o.monotonic ?? (() => performance.now())
  }

  start(): void {
    this.stopped = false
    this.timer = setInterval(() => void this.run(), this.o.config.scaleIntervalMs)
    this.timer.unref()
    // A queued job or a request waiting for a load-balancing worker: decide now, not at the next interval.
    this.unsubscribe = [
      this.o.events.onQueued((endpointId) => this.queued(endpointId)),
      this.o.events.onJobQueued((endpointId, low) => this.scaleFromZero(endpointId, low)),
    ]
    if (this.o.loadBalancer) this.unsubscribe.push(this.o.loadBalancer.onWaiting(() => void this.run()))
    void this.run()
  }

  /** Stops deciding; waits for a run in progress and the starts it handed off (called off first: see cancelStarts). */
  async stop(): Promise<void> {
    this.stopped = true
    clearInterval(this.timer)
    for (const off of this.unsubscribe.splice(0)) off()
    await this.running
    await Promise.allSettled([...this.starting])
  }

  /**
   * Asks for a run soon (coalesced). The promise settles once a run that started after this call has
   * ended (sooner when the scaler stops or a run fails) and the starts handed off by then have settled:
   * tests move their monotonic clock, then await a decision and its workers.
   */
  poke(): Promise<void> {
    return this.run().then(() => this.started())
  }

  /** `poke` without waiting for starts: what the scaler's own triggers use. */
  private run(): Promise<void> {
    if (this.stopped) return Promise.resolve()
    if (this.running) {
      this.again = true
      return this.running
    }
    this.running = (async () => {
      try {
        for (;;) {
          this.again = false
          const started = this.mono()
          await this.tick()
          if (!this.again || this.stopped) break
          // Back-to-back reruns (a steady stream of submissions) are spaced out: on PostgreSQL every run
          // counts the endpoints' jobs in the database, and unspaced runs kept one backend busy counting.
          const wait = started + RERUN_GAP_MS - this.mono()
          if (wait > 0) await new Promise((r) => setTimeout(r, wait))
          if (this.stopped) break
        }
      } catch (err) {
        this.o.log.error({ err }, 'scaling run failed')
      } finally {
        this.running = undefined
      }
    })()
    return this.running
  }

  /** Settles once the starts handed off so far have (the runs themselves never wait for them). */
  private async started(): Promise<void> {
    await Promise.allSettled([...this.starting])
  }

  /**
   * Jobs were queued: a decision follows unless a waiting worker took them. Checked on the next turn of the
   * event loop, after the take's own write: a lone /runsync on an idle worker costs no decision (the
   * interval's decisions still see every endpoint), while jobs left waiting, a parked worker's among them
   * (FlashBoot), get one at once. Endpoints scaled by REQUEST_COUNT count running jobs too: they always
   * get one. While a run is going on, the next one follows it as for any other request.
   */
  private queued(endpointId: string): void {
    if (this.running) {
      void this.run()
      return
    }
    if (this.submitted.size === 0) setImmediate(() => void this.decideIfWaiting())
    this.submitted.add(endpointId)
  }

  /**
   * A job was queued: where all of the endpoint's workers are parked, the one the next decision would take back
   * is taken back now (see unparkForJob), from the last decision's view of the endpoint and the workers as
   * they are. Its held job-take then gets the job, on SQLite in the commit of the job's own insert, instead of
   * after a decision and a commit of its own. A release made since the last decision is seen only by the next
   * interval's decision, which retires the worker after this job (as it does an idle worker of that release).
   * Runs inside the submission's `queued` call: a failure here is logged, never passed on to the submission.
   */
  private scaleFromZero(endpointId: string, lowPriority: boolean): void {
    const last = this.last.get(endpointId)
    // lowPriority jobs never scale up. Most endpoints have no parked worker: they cost a look-up per job.
    if (lowPriority || !last || this.stopped || !this.mayHaveParked.has(endpointId)) return
    try {
      const { workers } = this.o
      const snapshot: EndpointScaling = {
        ...last.snapshot,
        queued: last.snapshot.queued + 1,
        workers: workers.snapshot(endpointId, last.version),
        backoffMs: workers.backoffMs(endpointId),
      }
      for (const workerId of unparkForJob(snapshot)) workers.unpark(workerId)
    } catch (err) {
      this.o.log.error({ err, endpointId }, 'taking a parked worker back for a queued job failed')
    }
  }

  /** Endpoints that may have parked workers: marked when this scaler parks one, and by each decision as it sees them. */
  private readonly mayHaveParked = new Set<string>()

  /** Endpoints with jobs queued since the last check (see `queued`). */
  private readonly submitted = new Set<string>()

  private async decideIfWaiting(): Promise<void> {
    const ids = [...this.submitted]
    this.submitted.clear()
    if (this.stopped) return
    try {
      for (const id of ids) {
        if (this.last.get(id)?.snapshot.policy.type === 'QUEUE_DELAY') {
          const c = await this.o.store.jobs.counts(id)
          if (c.inQueue - c.inQueueLow === 0) continue
        }
        await this.run()
        return
      }
    } catch (err) {
      this.o.log.error({ err }, 'scaling run failed')
    }
  }

  /** One decision for every endpoint that has demand, workers or a minimum: public so tests can run it. */
  async tick(): Promise<void> {
    const { endpoints, snapshots } = await this.snapshot()
    this.byShare(snapshots, endpoints)
    const now = this.mono()
    for (const s of snapshots) {
      const decision = planScaling(s)
      const keepMs = Math.max(s.idleTimeoutMs, BURST_WINDOW_MS)
      this.history.set(
        s.endpointId,
        recordSample(
          this.history.get(s.endpointId) ?? [],
          { at: now, queued: s.queued, desired: decision.desired },
          keepMs,
        ),
      )
      this.last.set(s.endpointId, { snapshot: s, version: endpoints.get(s.endpointId)?.version ?? null })
      if (s.workers.some((w) => w.state === 'parked')) this.mayHaveParked.add(s.endpointId)
      else this.mayHaveParked.delete(s.endpointId)
      // Throttled workers retry placement every tick: only decisions that change something are logged.
      if (decision.actions.some((a) => a.type !== 'place')) this.logDecision(s, decision)
      for (const action of decision.actions) await this.apply(action, endpoints.get(s.endpointId))
    }
    const seen = new Set(snapshots.map((s) => s.endpointId))
    for (const id of [...this.last.keys()]) if (!seen.has(id)) this.last.delete(id)
    for (const id of [...this.mayHaveParked]) if (!seen.has(id)) this.mayHaveParked.delete(id)
    for (const id of [...this.loggedDesired.keys()]) if (!seen.has(id)) this.loggedDesired.delete(id)
    for (const [id, h] of [...this.history])
      if (!seen.has(id) && now - h[h.length - 1].at > 3_600_000) this.history.delete(id)
  }

  /** Fair share: the endpoints of accounts first in line for scarce GPUs go first (a stable sort). */
  private byShare(snapshots: EndpointScaling[], endpoints: Map<string, EndpointRecord>): void {
    const share = this.o.share
    if (!share || snapshots.length < 2) return
    const accountOf = (s: EndpointScaling) => endpoints.get(s.endpointId)?.accountId ?? ''
    const rank = new Map(share.order(new Set(snapshots.map(accountOf))).map((id, i) => [id, i]))
    snapshots.sort((a, b) => (rank.get(accountOf(a)) ?? 0) - (rank.get(accountOf(b)) ?? 0))
  }

  /**
   * Why a waiting job of the endpoint does not run (null: a worker is about to take it, or nothing is
   * known yet). Demand is from the last decision, workers as they are now.
   */
  waitingReason(endpointId: string, lowPriority = false): WaitingReason | null {
    const drops = this.o.dropped?.report(endpointId)
    if (drops) return dropsReason({ ...drops, windowMs: DROP_WINDOW_MS })
    const last = this.last.get(endpointId)
    if (!last) return null
    const { workers } = this.o
    const s: EndpointScaling = {
      ...last.snapshot,
      workers: workers.snapshot(endpointId, last.version),
      backoffMs: workers.backoffMs(endpointId),
    }
    const f = workers.failures(endpointId)
    return waitingReason(
      s,
      {
        noCapacity: workers.noCapacityReason(endpointId),
        pendingCapacity: workers.pendingCapacityReason(endpointId),
        failures: f.consecutive,
        lastFailure: f.last,
      },
      lowPriority,
    )
  }

  /**
   * Waiting jobs of an endpoint now, and why they wait. The counts are the store's, the very numbers /health
   * reports, not those of the last decision (up to a tick old); only the reason comes from the decision.
   */
  async waiting(endpointId: string): Promise<WaitingView> {
    const c = await this.o.store.jobs.counts(endpointId)
    const jobs = c.inQueue - c.inQueueLow
    // Dropped takes are reported with nothing waiting too: the dropped jobs sit IN_PROGRESS in between.
    if (c.inQueue === 0)
      return {
        jobs: 0,
        lowPriorityJobs: 0,
        reason: this.o.dropped?.report(endpointId) ? this.waitingReason(endpointId) : null,
      }
    return { jobs, lowPriorityJobs: c.inQueueLow, reason: this.waitingReason(endpointId, jobs === 0) }
  }

  private async snapshot(): Promise<{ endpoints: Map<string, EndpointRecord>; snapshots: EndpointScaling[] }> {
    const { store, workers, clock, config } = this.o
    const endpoints = new Map<string, EndpointRecord>()
    const lb = this.o.loadBalancer
    for (const ep of await store.endpoints.listAll())
      if (ep.type === 'QUEUE' || (lb && ep.type === 'LOAD_BALANCER')) endpoints.set(ep.id, ep)
    const demand = new Map((await store.jobs.activeEndpoints()).map((d) => [d.endpointId, d]))
    const ids = new Set([...endpoints.values()].filter((e) => e.workers.min > 0).map((e) => e.id))
    for (const id of demand.keys()) ids.add(id)
    for (const id of workers.endpointsWithWorkers()) ids.add(id)
    for (const id of lb?.busyEndpoints() ?? []) ids.add(id)
    const now = clock.now()
    const mono = this.mono()
    const snapshots: EndpointScaling[] = []
    for (const id of ids) {
      const ep = endpoints.get(id)
      const d = demand.get(id)
      if (lb && ep?.type === 'LOAD_BALANCER') {
        snapshots.push(
          lbEndpointScaling({
            endpointId: id,
            exists: true,
            requestCount: ep.scaling.type === 'REQUEST_COUNT' ? ep.scaling.requestCount : 1,
            demand: lb.demand(id),
            min: ep.workers.min,
            max: ep.workers.max,
            idleTimeoutMs: (ep.workers.idleTimeout ?? 10) * 1000,
            flashboot: ep.flashboot,
            parkWindowMs: parkWindowMs(ep.flashboot, config),
            workers: workers.snapshot(id, ep.version),
            backoffMs: workers.backoffMs(id),
            history: relativeHistory(this.history.get(id) ?? [], mono),
          }),
        )
        continue
      }
      snapshots.push({
        endpointId: id,
        exists: ep !== undefined,
        policy: policyOf(ep),
        min: ep?.workers.min ?? 0,
        max: ep?.workers.max ?? 0,
        // QUEUE endpoints on REQUEST_COUNT have no idleTimeout: the configured cool-down stands in for it.
        idleTimeoutMs:
          ep?.workers.idleTimeout !== undefined ? ep.workers.idleTimeout * 1000 : config.requestCountIdleTimeoutMs,
        flashboot: ep?.flashboot ?? 'OFF',
        parkWindowMs: ep ? parkWindowMs(ep.flashboot, config) : 0,
        queued: d ? d.inQueue - d.inQueueLow : 0,
        queuedLow: d?.inQueueLow ?? 0,
        inProgress: d?.inProgress ?? 0,
        oldestWaitMs: d?.oldestQueuedAt != null ? Math.max(0, now - d.oldestQueuedAt) : 0,
        workers: workers.snapshot(id, ep?.version ?? null),
        backoffMs: workers.backoffMs(id),
        history: relativeHistory(this.history.get(id) ?? [], mono),
      })
    }
    return { endpoints, snapshots }
  }

  private async apply(action: ScaleAction, ep: EndpointRecord | undefined): Promise<void> {
    const { workers } = this.o
    switch (action.type) {
      case 'stop':
        // Not awaited: a stopping worker must not hold up decisions for other endpoints.
        void workers.stop(action.workerId, action.reason)
        return
      case 'retire':
        workers.retire(action.workerId, action.reason)
        return
      case 'unpark':
        workers.unpark(action.workerId)
        return
      case 'park':
        if (workers.park(action.workerId, action.reason, ep?.flashboot === 'PRIORITY_FLASHBOOT'))
          this.mayHaveParked.add(action.endpointId)
        return
    }
    if (!ep) return
    // Starts are handed off, not awaited: a worker is placed (or kept THROTTLED) before its start's first
    // await, so the next decision counts it, and the runtime's part (an image pull, a Pod waiting for a
    // node) delays only that worker; every endpoint gets its decision each pass. The runtime bounds how
    // many starts run at once per host and per cluster (see LimitedStarts).
    if (action.type === 'place') this.handOff(workers.place(action.workerId, ep), ep.id)
    else if (action.type === 'replace') this.handOff(workers.replace(action.workerId, ep), ep.id)
    else {
      // A broken worker would fail the same way again: after a failure, one start per decision is enough.
      const count = workers.failures(ep.id).consecutive > 0 ? Math.min(1, action.count) : action.count
      for (let i = 0; i < count; i++) this.handOff(workers.start(ep), ep.id)
    }
  }

  /** Starts handed off and not yet settled: `stop` and `poke` wait for them. */
  private readonly starting = new Set<Promise<unknown>>()

  private handOff(start: Promise<StartResult>, endpointId: string): void {
    const settled = start.then(
      () => undefined,
      // The worker service records a failed start itself; a rejection here is a bug in it, said once.
      (err: unknown) => this.o.log.error({ err, endpointId }, 'starting a worker failed'),
    )
    this.starting.add(settled)
    void settled.then(() => this.starting.delete(settled))
  }

  private logDecision(s: EndpointScaling, d: ScalingDecision): void {
    const workers: Record<string, number> = {}
    for (const w of s.workers) workers[w.state] = (workers[w.state] ?? 0) + 1
    const actions = d.actions.map((a) => (a.type === 'start' ? `start x${a.count}` : `${a.type} ${a.workerId}`))
    // A new target worker count is what an operator wants to see; the churn around one target (retiring,
    // parking, replacing workers) is for debugging.
    const notable = this.loggedDesired.get(s.endpointId) !== d.desired
    this.loggedDesired.set(s.endpointId, d.desired)
    this.o.log[notable ? 'info' : 'debug'](
      {
        endpointId: s.endpointId,
        policy: s.policy,
        min: s.min,
        max: s.max,
        queued: s.queued,
        queuedLow: s.queuedLow,
        inProgress: s.inProgress,
        oldestWaitMs: Math.round(s.oldestWaitMs),
        workers,
        backoffMs: Math.round(s.backoffMs),
        current: d.current,
        desired: d.desired,
        keep: d.keep,
        burst: d.burst,
        actions,
      },
      'scaling decision',
    )
  }
}

function policyOf(ep: EndpointRecord | undefined): ScalingPolicy {
  if (ep?.scaling.type === 'REQUEST_COUNT') return { type: 'REQUEST_COUNT', requestCount: ep.scaling.requestCount }
  return { type: 'QUEUE_DELAY', queueDelayMs: ep?.scaling.type === 'QUEUE_DELAY' ? ep.scaling.queueDelay * 1000 : 0 }
}
