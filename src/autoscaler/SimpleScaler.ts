import type { EndpointRecord } from '../domain/endpoint.js'
import { planScaling, type EndpointScaling, type ScaleAction } from '../domain/planScaling.js'
import type { JobEvents } from '../services/JobEvents.js'
import type { Log } from '../services/log.js'
import type { WorkerService } from '../services/WorkerService.js'
import type { Store } from '../store/Store.js'

export interface SimpleScalerOptions {
  store: Store
  workers: WorkerService
  events: JobEvents
  log: Log
  /** How often decisions run (also on every submission). */
  intervalMs: number
  /** Idle timeout for QUEUE endpoints scaled on REQUEST_COUNT, which have no workers.idleTimeout. */
  requestCountIdleTimeoutMs: number
}

/**
 * The loop around planScaling: snapshot -> plan -> apply through the WorkerService. Runs every
 * `intervalMs` and right after a job is queued; runs never overlap (a request during a run triggers one
 * more run after it).
 */
export class SimpleScaler {
  private timer: NodeJS.Timeout | undefined
  private unsubscribe: (() => void) | undefined
  private running: Promise<void> | undefined
  private again = false
  private stopped = false

  constructor(private readonly o: SimpleScalerOptions) {}

  start(): void {
    this.stopped = false
    this.timer = setInterval(() => this.poke(), this.o.intervalMs)
    this.timer.unref()
    this.unsubscribe = this.o.events.onQueued(() => this.poke())
    this.poke()
  }

  /** Stops deciding; waits for a run in progress to finish. */
  async stop(): Promise<void> {
    this.stopped = true
    clearInterval(this.timer)
    this.unsubscribe?.()
    await this.running
  }

  /** Asks for a run soon (coalesced). */
  poke(): void {
    if (this.stopped) return
    if (this.running) {
      this.again = true
      return
    }
    this.running = (async () => {
      try {
        do {
          this.again = false
          await this.tick()
        } while (this.again && !this.stopped)
      } catch (err) {
        this.o.log.error({ err }, 'scaling run failed')
      } finally {
        this.running = undefined
      }
    })()
  }

  /** One decision: public so tests can run it on demand. */
  async tick(): Promise<void> {
    const { endpoints, snapshot } = await this.snapshot()
    const actions = planScaling(snapshot)
    for (const e of snapshot) if (!actions.some((a) => a.type === 'start' && a.endpointId === e.endpointId)) this.o.workers.setThrottled(e.endpointId, 0)
    for (const action of actions) await this.apply(action, endpoints)
  }

  private async snapshot(): Promise<{ endpoints: Map<string, EndpointRecord>; snapshot: EndpointScaling[] }> {
    const { store, workers } = this.o
    const endpoints = new Map<string, EndpointRecord>()
    for (const ep of (await store.endpoints.list({})) as EndpointRecord[]) if (ep.type === 'QUEUE') endpoints.set(ep.id, ep)
    const demand = new Map((await store.jobs.activeEndpoints()).map((d) => [d.endpointId, d]))
    const ids = new Set([...endpoints.values()].filter((e) => e.workers.min > 0).map((e) => e.id))
    for (const id of demand.keys()) ids.add(id)
    for (const id of workers.endpointsWithWorkers()) ids.add(id)
    const snapshot: EndpointScaling[] = []
    for (const id of ids) {
      const ep = endpoints.get(id)
      const d = demand.get(id)
      snapshot.push({
        endpointId: id,
        exists: ep !== undefined,
        min: ep?.workers.min ?? 0,
        max: ep?.workers.max ?? 0,
        idleTimeoutMs: ep?.workers.idleTimeout !== undefined ? ep.workers.idleTimeout * 1000 : this.o.requestCountIdleTimeoutMs,
        queued: d ? d.inQueue - d.inQueueLow : 0,
        queuedLow: d?.inQueueLow ?? 0,
        workers: workers.snapshot(id),
        backoffMs: workers.backoffMs(id),
      })
    }
    return { endpoints, snapshot }
  }

  private async apply(action: ScaleAction, endpoints: Map<string, EndpointRecord>): Promise<void> {
    const { workers, log } = this.o
    if (action.type === 'stop') {
      // Not awaited: a stopping worker must not hold up decisions for other endpoints.
      void workers.stop(action.workerId, action.reason)
      return
    }
    const ep = endpoints.get(action.endpointId)
    if (!ep) return
    let unplaced = 0
    let reason = ''
    for (let i = 0; i < action.count; i++) {
      const r = await workers.start(ep)
      if (r.ok) continue
      if (r.capacity) {
        unplaced = action.count - i
        reason = r.reason
      }
      log.warn({ endpointId: ep.id, reason: r.reason }, r.capacity ? 'no capacity for a worker' : 'worker could not start')
      break
    }
    workers.setThrottled(ep.id, unplaced, reason)
  }
}
