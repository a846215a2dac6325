import { Agent, request } from 'undici'
import { healthOf, type LbHealth } from '../../domain/workers/planLbScaling.js'
import type { Log } from '../log.js'
import type { LoadBalancerConfig } from './loadBalancerConfig.js'
import type { HttpWorker } from '../workers/types.js'
import type { WorkerService } from '../workers/WorkerService.js'

export interface HealthPollerOptions {
  workers: Pick<WorkerService, 'httpWorkers' | 'contact' | 'lose'>
  config: Pick<
    LoadBalancerConfig,
    'healthIntervalMs' | 'startingHealthIntervalMs' | 'healthTimeoutMs' | 'unhealthyAfter'
  >
  log: Log
  monotonic?: () => number
}

interface Tracked {
  health: LbHealth
  /** Consecutive failed checks. */
  failures: number
  /** It answered at least once (before that, a refused connection is a server still booting). */
  answered: boolean
  nextAt: number
  busy: boolean
}

/**
 * Polls each load-balancing worker's PORT_HEALTH + HEALTH_CHECK_PATH: 200 ready, 204 initializing, anything
 * else unhealthy. A 200 is the worker's sign of life (it becomes ready, like a queue worker's first call);
 * `unhealthyAfter` failed checks in a row replace it with the crash back-off. Until a starting worker has
 * answered once, a refused connection only means its server is not listening yet (the start timeout bounds that).
 */
export class HealthPoller {
  private readonly state = new Map<string, Tracked>()
  // Made again at each start: leadership may come back after a stop (the old agent is closed).
  private agent = new Agent({ keepAliveTimeout: 10_000, connections: 2 })
  private timer: NodeJS.Timeout | undefined
  private readonly mono: () => number
  private readonly checkedListeners = new Set<(endpointId: string, health: LbHealth) => void>()

  constructor(private readonly o: HealthPollerOptions) {
    this.mono = o.monotonic ?? (() => performance.now())
  }

  start(): void {
    if (this.agent.closed) this.agent = new Agent({ keepAliveTimeout: 10_000, connections: 2 })
    const tick = Math.max(10, Math.min(this.o.config.startingHealthIntervalMs, this.o.config.healthIntervalMs, 100))
    this.timer = setInterval(() => this.tick(), tick)
    this.timer.unref()
  }

  async stop(): Promise<void> {
    clearInterval(this.timer)
    await this.agent.close()
  }

  /**
   * Calls `listener` after each health read of a worker (a READY one may take waiting requests now).
   * Returns the unsubscribe.
   */
  onChecked(listener: (endpointId: string, health: LbHealth) => void): () => void {
    this.checkedListeners.add(listener)
    return () => this.checkedListeners.delete(listener)
  }

  /** The last health read of a worker; undefined before the first check. */
  health(workerId: string): LbHealth | undefined {
    return this.state.get(workerId)?.health
  }

  private tick(): void {
    const now = this.mono()
    const seen = new Set<string>()
    for (const w of this.o.workers.httpWorkers()) {
      seen.add(w.id)
      if (w.phase === 'stopping' || w.phase === 'unhealthy') continue
      let t = this.state.get(w.id)
      if (!t)
        this.state.set(w.id, (t = { health: 'INITIALIZING', failures: 0, answered: false, nextAt: now, busy: false }))
      if (t.busy || t.nextAt > now) continue
      t.busy = true
      void this.check(w, t).finally(() => {
        t.busy = false
        t.nextAt =
          this.mono() +
          (w.phase === 'starting' ? this.o.config.startingHealthIntervalMs : this.o.config.healthIntervalMs)
      })
    }
    for (const id of [...this.state.keys()]) if (!seen.has(id)) this.state.delete(id)
  }

  private async check(w: HttpWorker, t: Tracked): Promise<void> {
    const path = w.address.healthPath
    let status: number | null = null
    let error = ''
    try {
      const res = await request(`http://${w.address.host}:${w.address.healthPort}${path}`, {
        dispatcher: this.agent,
        headersTimeout: this.o.config.healthTimeoutMs,
        bodyTimeout: this.o.config.healthTimeoutMs,
      })
      status = res.statusCode
      await res.body.dump()
    } catch (err) {
      error = (err as Error).message
    }
    const health = healthOf(status)
    if (status !== null) t.answered = true
    if (health !== 'UNHEALTHY') {
      t.failures = 0
      t.health = health
      // 200 makes a starting worker ready; any answer of a ready worker keeps it alive (a 204 only pauses its traffic).
      if (health === 'READY' || w.phase !== 'starting') this.o.workers.contact(w.id)
    } else if (!t.answered && w.phase === 'starting') {
      // Not listening yet: still initializing.
    } else {
      t.health = 'UNHEALTHY'
      if (++t.failures >= this.o.config.unhealthyAfter) {
        const why = status === null ? `no answer (${error})` : `HTTP ${status}`
        this.o.workers.lose(
          w.id,
          `worker ${w.id} failed ${t.failures} health checks in a row on port ${w.address.healthPort} ${path}: ${why}`,
        )
      }
    }
    for (const listener of this.checkedListeners) listener(w.endpointId, t.health)
  }
}
