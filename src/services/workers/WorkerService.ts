import type { WorkerList } from '../../contract/worker.js'
import type { EndpointRecord } from '../../domain/endpoints/endpoint.js'
import type { WorkerSnapshot } from '../../domain/workers/planScaling.js'
import type { WorkerLog } from '../../runtime/WorkerLog.js'
import type { WorkerHealth } from '../jobs/JobService.js'
import { CrashBackoff } from './CrashBackoff.js'
import { FleetView } from './FleetView.js'
import type { HealthReadings, HttpWorker, ScalingSignals, StartResult, TakeTurn, WorkerServiceDeps } from './types.js'
import type { WorkerContext } from './WorkerContext.js'
import { FollowerDirectory, LeaderDirectory, type WorkerDirectory } from './WorkerDirectory.js'
import { WorkerLifecycle } from './WorkerLifecycle.js'
import { LiveWorkers } from './LiveWorkers.js'
import { WorkerLogArchive } from './WorkerLogArchive.js'
import { WorkerReads } from './WorkerReads.js'
import { WorkerRecovery } from './WorkerRecovery.js'

/**
 * Serverless workers: placing them in the fleet, starting and stopping them through the RuntimeDriver,
 * parking them (FlashBoot), their protocol keys, heartbeats, crash back-off, and what happens to their
 * jobs when they die. Live state is in memory (see LiveWorker); the store keeps what a restart must know.
 *
 * Workers belong to the fleet, not to a process. With several control-plane processes only the leader holds
 * live workers (it starts, watches, parks, stops them; `lead()` adopts those of a leader that died). The
 * others (`follow()`) serve the worker protocol for any worker: keys and endpoints from the store, phases
 * (draining, parked, retiring) from the leader's `worker.state` broadcasts, jobs taken straight from the
 * store; signs of life, jobs taken and stopPod go to the leader through the change feed, so its heartbeat
 * checks and scaling decisions count calls made anywhere. A single process leads from the start.
 */
export class WorkerService {
  private readonly lifecycle: WorkerLifecycle
  private readonly recovery: WorkerRecovery
  private readonly reads: WorkerReads
  private readonly leader: LeaderDirectory
  /** Null without a change feed: a process that follows then answers from its (empty) live workers. */
  private readonly follower: FollowerDirectory | null
  private readonly view: FleetView | null
  /** The leader's directory, or the follower's after `follow()`: the protocol calls that differ between the two. */
  private directory: WorkerDirectory

  constructor(deps: WorkerServiceDeps) {
    const mono = deps.monotonic ?? (() => performance.now())
    const ctx: WorkerContext = {
      deps,
      mono,
      live: new LiveWorkers(),
      http: new Map(),
      detached: new WeakSet(),
      endedLogs: new WorkerLogArchive((id) => deps.runtime.logPath('worker', id)),
      backoff: new CrashBackoff({
        baseMs: deps.config.crashBackoffMs,
        maxMs: deps.config.crashBackoffMaxMs,
        now: mono,
      }),
      describe: (w) => this.directory.describe(w),
    }
    this.lifecycle = new WorkerLifecycle(ctx)
    this.recovery = new WorkerRecovery(ctx, this.lifecycle)
    this.reads = new WorkerReads(ctx, (endpointId) => this.directory.workers(endpointId))
    this.leader = new LeaderDirectory(ctx, this.lifecycle)
    this.directory = this.leader
    deps.events.onJobLeftWorker((workerId, jobId) => this.lifecycle.jobLeft(workerId, jobId))
    const feed = deps.feed
    this.view = feed ? new FleetView({ store: deps.store, feed, mono }) : null
    this.follower = this.view ? new FollowerDirectory(this.view) : null
    if (feed) {
      // What followers saw of the leader's workers (acted on only while this process leads).
      feed.on('worker.contact', (id) => this.directory.relayed?.contact(id))
      feed.on('worker.taken', (p) => {
        const [id, ...jobIds] = p.split(' ')
        this.directory.relayed?.jobsTaken(id, jobIds)
      })
      feed.on('worker.recycle', (id) => this.directory.relayed?.recycle(id))
    }
  }

  /**
   * Attaches the parts whose view the workers list shows: the autoscaler (why jobs wait) and the health checks
   * of load-balancing workers. Both are built on this service (they watch and drive its workers), so they
   * exist only after it: this is the one step that closes that loop, before the server listens.
   */
  attach(watchers: { scaler: ScalingSignals; health: HealthReadings }): void {
    this.reads.attach(watchers)
  }

  /**
   * This process became the leader: it adopts the workers of the previous run (or of a leader that died) and
   * stops the others (see WorkerRecovery), then answers the worker protocol from its live workers, then
   * requeues the running jobs of the workers it did not adopt. Before anyone can call, on a sole process. With
   * several, the others' workers call meanwhile: the follower's directory answers them until they are adopted
   * (an empty leader directory would refuse them, and the Python SDK drops a result refused with 401: the job
   * would stay IN_PROGRESS on a worker that no longer runs it), and the jobs are read after the switch, so
   * those taken while the workers were being adopted are counted as theirs.
   */
  async lead(opts: { keepRunningJobs?: boolean } = {}): Promise<void> {
    await this.recovery.adoptWorkers()
    this.directory = this.leader
    this.view?.clear()
    this.leader.start()
    await this.recovery.recoverJobs(opts)
  }

  /**
   * This process is no longer the leader (or not yet): its live workers are forgotten, not stopped; they keep
   * running and the next leader adopts them. Their capacity is released here (the next leader restores it).
   */
  follow(): void {
    this.directory = this.follower ?? this.leader
    this.leader.stop()
    this.lifecycle.handOver()
  }

  // Recovery (see WorkerRecovery).
  hostDown(hostId: string, reason: string): void {
    this.recovery.hostDown(hostId, reason)
  }
  reconcileHost(hostId: string): Promise<void> {
    return this.recovery.reconcileHost(hostId)
  }
  cancelStarts(): void {
    this.recovery.cancelStarts()
  }

  // Lifecycle (see WorkerLifecycle).
  start(ep: EndpointRecord): Promise<StartResult> {
    return this.lifecycle.start(ep)
  }
  place(workerId: string, ep: EndpointRecord): Promise<StartResult> {
    return this.lifecycle.place(workerId, ep)
  }
  replace(workerId: string, ep: EndpointRecord): Promise<StartResult> {
    return this.lifecycle.replace(workerId, ep)
  }
  stop(workerId: string, reason: string): Promise<void> {
    return this.lifecycle.stop(workerId, reason)
  }
  stopAll(reason: string): Promise<void> {
    return this.lifecycle.stopAll(reason)
  }
  park(workerId: string, reason: string, priority: boolean): boolean {
    return this.lifecycle.park(workerId, reason, priority)
  }
  unpark(workerId: string): boolean {
    return this.lifecycle.unpark(workerId)
  }
  retire(workerId: string, reason: string): void {
    this.lifecycle.retire(workerId, reason)
  }
  checkLiveness(): void {
    this.lifecycle.checkLiveness()
  }
  lose(workerId: string, reason: string): void {
    this.lifecycle.lose(workerId, reason)
  }

  // The worker protocol, answered by the leader's or the follower's directory (see WorkerDirectory).
  recycle(workerId: string): void {
    this.directory.recycle(workerId)
  }
  authenticate(endpointId: string, workerId: string, token: string | undefined): boolean | Promise<boolean> {
    return this.directory.authenticate(endpointId, workerId, token)
  }
  contact(workerId: string): void {
    this.directory.contact(workerId)
  }
  isDraining(workerId: string): boolean {
    return this.directory.isDraining(workerId)
  }

  /**
   * One pass of a worker's job-take, answered in one look-up: it counts as contact (see `contact`), then
   * says whether the worker may take jobs now (`take`), must have its poll held without one (`hold`:
   * parked, or retiring after its jobs) or should stop asking (`drain`: being stopped, or unknown).
   */
  takeTurn(workerId: string): TakeTurn {
    return this.directory.takeTurn(workerId)
  }
  jobsTaken(workerId: string, jobIds: string[]): void {
    this.directory.jobsTaken(workerId, jobIds)
  }

  /**
   * A proxied request began on a load-balancing worker. Requests count like jobs: the worker is RUNNING
   * while it has any, idle time starts when the last ends, and a retiring worker stops after it (draining).
   */
  requestStarted(workerId: string, requestId: string): void {
    this.directory.jobsTaken(workerId, [requestId])
  }

  /** A proxied request ended (however it ended). */
  requestEnded(workerId: string, requestId: string): void {
    this.lifecycle.jobLeft(workerId, requestId)
  }

  // Read models (see WorkerReads).
  httpWorkers(endpointId?: string): HttpWorker[] {
    return this.reads.httpWorkers(endpointId)
  }
  snapshot(endpointId: string, version: number | null = null): WorkerSnapshot[] {
    return this.reads.snapshot(endpointId, version)
  }
  endpointsWithWorkers(): string[] {
    return this.reads.endpointsWithWorkers()
  }
  runningCount(endpointId: string): number {
    return this.reads.runningCount(endpointId)
  }
  backoffMs(endpointId: string): number {
    return this.reads.backoffMs(endpointId)
  }
  failures(endpointId: string): { consecutive: number; last: string | null } {
    return this.reads.failures(endpointId)
  }
  noCapacityReason(endpointId: string): string | null {
    return this.reads.noCapacityReason(endpointId)
  }
  pendingCapacityReason(endpointId: string): string | null {
    return this.reads.pendingCapacityReason(endpointId)
  }
  health(endpointId: string): WorkerHealth {
    return this.reads.health(endpointId)
  }
  list(accountId: string, endpointId: string): Promise<WorkerList> {
    return this.reads.list(accountId, endpointId)
  }
  versions(endpointId: string): number[] {
    return this.reads.versions(endpointId)
  }
  logs(accountId: string, endpointId: string, workerId: string): Promise<WorkerLog> {
    return this.reads.logs(accountId, endpointId, workerId)
  }
}
