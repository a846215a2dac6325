import type { WorkerList } from '../../contract/worker.js'
import { notFound } from '../../domain/errors.js'
import { parkWindowMs, type WorkerSnapshot } from '../../domain/workers/planScaling.js'
import type { WorkerLog } from '../../runtime/WorkerLog.js'
import type { WorkerHealth } from '../jobs/JobService.js'
import { snapshotOf, type LiveWorker } from './LiveWorker.js'
import type { WorkerContext } from './WorkerContext.js'
import { workerHealth, workerList } from './workerList.js'
import type { HealthReadings, HttpWorker, ScalingSignals } from './types.js'

/**
 * The read models of the workers: what the scaler, the rate limiter, /health, the workers list, the logs API
 * and the load balancer see of them. `workers` gives the fleet's live workers of an endpoint as this process
 * knows them (see WorkerDirectory.workers).
 */
export class WorkerReads {
  /** What the workers list shows from the parts that watch the workers (see `attach`). */
  private scaler: ScalingSignals | null = null
  private healthChecks: HealthReadings | null = null

  constructor(
    private readonly ctx: WorkerContext<'store' | 'clock' | 'config' | 'runtimeOf' | 'baseUrl'>,
    private readonly workers: (endpointId?: string) => LiveWorker[],
  ) {}

  /** See WorkerService.attach. */
  attach(watchers: { scaler: ScalingSignals; health: HealthReadings }): void {
    this.scaler = watchers.scaler
    this.healthChecks = watchers.health
  }

  /** Load-balancing workers with a process and an address (of one endpoint, or all). */
  httpWorkers(endpointId?: string): HttpWorker[] {
    const out: HttpWorker[] = []
    for (const w of this.ctx.live.values()) {
      const address = this.ctx.http.get(w.id)
      if (!address || !w.handle || (endpointId !== undefined && w.endpointId !== endpointId)) continue
      out.push({
        id: w.id,
        endpointId: w.endpointId,
        phase: w.phase,
        retiring: w.retiring,
        inFlight: w.jobs.size,
        address,
      })
    }
    return out
  }

  /** Workers of an endpoint as the scaler sees them; `version` is the endpoint's current release. */
  snapshot(endpointId: string, version: number | null = null): WorkerSnapshot[] {
    const now = this.ctx.mono()
    return this.workers(endpointId).map((w) => snapshotOf(w, now, version))
  }

  /** Endpoints that have live workers (of any phase). */
  endpointsWithWorkers(): string[] {
    return [...new Set(this.workers().map((w) => w.endpointId))]
  }

  /** Workers taking jobs (the rate limiter's dynamic limit). */
  runningCount(endpointId: string): number {
    return this.workers(endpointId).filter((w) => w.phase === 'ready').length
  }

  /** ms to wait before starting another worker of an endpoint whose workers keep failing (0 = go). */
  backoffMs(endpointId: string): number {
    return this.ctx.backoff.remainingMs(endpointId)
  }

  /** Consecutive failures of an endpoint's workers and the last one, for users wondering why nothing runs. */
  failures(endpointId: string): { consecutive: number; last: string | null } {
    return { consecutive: this.ctx.backoff.consecutive(endpointId), last: this.ctx.backoff.lastReason(endpointId) }
  }

  /** Why the endpoint's throttled workers cannot be placed (the latest placement failure), or null. */
  noCapacityReason(endpointId: string): string | null {
    return (
      this.workers(endpointId)
        .filter((w) => w.phase === 'throttled' && w.lastError)
        .pop()?.lastError ?? null
    )
  }

  /** Why the endpoint's starting workers wait for their runtime to place them (Kubernetes: unschedulable), or null. */
  pendingCapacityReason(endpointId: string): string | null {
    return (
      this.workers(endpointId)
        .filter((w) => w.phase === 'starting' && w.waitingFor)
        .pop()?.waitingFor ?? null
    )
  }

  /** /health worker counters. */
  health(endpointId: string): WorkerHealth {
    return workerHealth(this.workers(endpointId))
  }

  /** GET /v2/serverless/{id}/workers: the workers of an endpoint the caller owns, and why jobs wait. */
  async list(accountId: string, endpointId: string): Promise<WorkerList> {
    const { deps } = this.ctx
    const ep = await deps.store.endpoints.get(endpointId)
    if (!ep || ep.accountId !== accountId) throw notFound('endpoint', endpointId)
    return workerList(this.workers(endpointId), {
      health: (workerId) => this.healthChecks?.health(workerId),
      endpointVersion: ep.version,
      now: deps.clock.now(),
      mono: this.ctx.mono(),
      backoffMs: this.ctx.backoff.remainingMs(endpointId),
      parkWindowMs: parkWindowMs(ep.flashboot, deps.config),
      waiting: (await this.scaler?.waiting(endpointId)) ?? { jobs: 0, lowPriorityJobs: 0, reason: null },
      runtimeOf: deps.runtimeOf,
      workerUrl: deps.baseUrl,
    })
  }

  /** Release versions of an endpoint's serving workers (rollout numbers of its releases). */
  versions(endpointId: string): number[] {
    return this.workers(endpointId)
      .filter((w) => w.record && (w.phase === 'starting' || w.phase === 'ready'))
      .map((w) => w.record!.version)
  }

  /**
   * The output of a worker of an endpoint the caller owns: live, recently ended (memory), or older (its log
   * file). A foreign endpoint or worker is answered like a missing one.
   */
  async logs(accountId: string, endpointId: string, workerId: string): Promise<WorkerLog> {
    const { deps } = this.ctx
    const ep = await deps.store.endpoints.get(endpointId)
    if (!ep || ep.accountId !== accountId) throw notFound('endpoint', endpointId)
    const w = await deps.store.workers.get(workerId)
    if (!w || w.endpointId !== endpointId) throw notFound('worker', workerId)
    return this.ctx.live.get(workerId)?.handle?.logs ?? this.ctx.endedLogs.find(workerId)
  }
}
