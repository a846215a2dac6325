import { randomUUID } from 'node:crypto'
import type { EndpointMetrics, MetricsWindow } from '../../contract/metrics.js'
import type { JobStatus } from '../../contract/job.js'
import type { Clock } from '../../domain/clock.js'
import {
  addCount,
  average,
  mergeInto,
  observe,
  quantile,
  RESOLUTIONS,
  sample,
  WINDOWS,
  type BucketData,
  type GaugeName,
  type HistogramName,
  type Resolution,
} from '../../domain/metrics/buckets.js'
import type { MetricRow, MetricStore } from '../../store/MetricStore.js'
import type { Log } from '../log.js'
import type { Metrics } from '../Metrics.js'

/** Live gauge values of one endpoint, sampled at each flush. */
export interface GaugeSample {
  endpointId: string
  workersRunning: number
  workersIdle: number
  workersThrottled: number
  queueDepth: number
}

export interface EndpointMetricsRecorderOptions {
  store: { metrics: MetricStore }
  clock: Clock
  log: Log
  /**
   * Gauges of the endpoints this replica can see now (workers live on the leader: a follower returns
   * none, so its zeros do not dilute the leader's averages).
   */
  gauges: () => Promise<GaugeSample[]>
  /** How often the tallies are written (and gauges sampled); default 10 s. */
  flushIntervalMs?: number
  /** How long rows of each resolution are kept; default a day and a quarter of minutes, 35 days of hours. */
  retentionMs?: Partial<Record<Resolution, number>>
  /** This process's name in the rows; default a random one per start (a restart writes rows of its own). */
  replica?: string
}

const PRUNE_EVERY_MS = 10 * 60_000
const FINAL: Partial<Record<JobStatus, 'completed' | 'failed' | 'cancelled' | 'timedOut'>> = {
  COMPLETED: 'completed',
  FAILED: 'failed',
  CANCELLED: 'cancelled',
  TIMED_OUT: 'timedOut',
}

interface Tally {
  endpointId: string
  resolution: Resolution
  bucket: number
  data: BucketData
  dirty: boolean
}

/**
 * Endpoint metrics for the API and the console: counts events in memory (a map update per event, nothing
 * awaited on the job path), and every `flushIntervalMs` writes this replica's 1-minute and 1-hour buckets
 * as rows of its own. No leader is needed: every replica flushes what it counted, and reads add the rows
 * of all replicas. Histograms use fixed bins, so buckets of replicas and of minutes merge by addition.
 */
export class EndpointMetricsRecorder implements Metrics {
  readonly replica: string
  private readonly tallies = new Map<string, Tally>()
  /** Each endpoint's open minute and hour tallies: the job path finds them without building keys. */
  private readonly current = new Map<string, { minute: Tally; hour: Tally }>()
  private timer: NodeJS.Timeout | undefined
  private flushing: Promise<void> | undefined
  private lastPrune = 0

  constructor(private readonly o: EndpointMetricsRecorderOptions) {
    this.replica = o.replica ?? randomUUID().slice(0, 12)
  }

  start(): void {
    if (this.timer) return
    this.timer = setInterval(() => void this.flush(), this.o.flushIntervalMs ?? 10_000)
    this.timer.unref()
  }

  /** Stops the timer and writes what is still in memory. */
  async stop(): Promise<void> {
    clearInterval(this.timer)
    this.timer = undefined
    await this.flush()
  }

  jobFinished(endpointId: string, status: JobStatus, runMs: number | null, delayMs?: number | null): void {
    const counter = FINAL[status]
    if (!counter) return
    this.each(endpointId, (d) => {
      addCount(d, counter)
      if (runMs !== null) observe(d, 'executionMs', runMs)
      if (delayMs !== null && delayMs !== undefined) observe(d, 'delayMs', delayMs)
    })
  }

  workerReady(endpointId: string, coldStartMs: number): void {
    this.each(endpointId, (d) => {
      addCount(d, 'coldStarts')
      observe(d, 'coldStartMs', coldStartMs)
    })
  }

  webhookAttempt(): void {}

  /** A request to a LOAD_BALANCER endpoint was answered (by a worker or by the proxy itself). */
  proxied(endpointId: string, statusCode: number, ms: number): void {
    const cls =
      statusCode >= 500 ? 'status5xx' : statusCode >= 400 ? 'status4xx' : statusCode >= 300 ? 'status3xx' : 'status2xx'
    this.each(endpointId, (d) => {
      addCount(d, 'requests')
      addCount(d, cls)
      observe(d, 'latencyMs', ms)
    })
  }

  /** Samples the gauges, writes changed buckets, forgets buckets that ended, prunes old rows now and then. */
  flush(): Promise<void> {
    // One flush at a time: a slow store must not stack them up.
    return (this.flushing ??= this.flushOnce().finally(() => (this.flushing = undefined)))
  }

  private async flushOnce(): Promise<void> {
    const now = this.o.clock.now()
    try {
      const active = new Set(
        [...this.tallies.values()].filter((t) => t.bucket + RESOLUTIONS[t.resolution] > now).map((t) => t.endpointId),
      )
      for (const g of await this.o.gauges()) {
        // Endpoints with nothing going on leave no rows; once an endpoint shows up in a bucket its zeros count too.
        if (!active.has(g.endpointId) && g.workersRunning + g.workersIdle + g.workersThrottled + g.queueDepth === 0)
          continue
        this.each(g.endpointId, (d) => {
          sample(d, 'workersRunning', g.workersRunning)
          sample(d, 'workersIdle', g.workersIdle)
          sample(d, 'workersThrottled', g.workersThrottled)
          sample(d, 'queueDepth', g.queueDepth)
        })
      }
    } catch (err) {
      this.o.log.warn({ err }, 'endpoint metrics: gauges not sampled')
    }
    const dirty = [...this.tallies.entries()].filter(([, t]) => t.dirty)
    for (const [, t] of dirty) t.dirty = false
    try {
      await this.o.store.metrics.put(dirty.map(([, t]) => this.row(t)))
    } catch (err) {
      // Kept in memory: the next flush writes them (the rows are whole, not increments).
      for (const [, t] of dirty) t.dirty = true
      this.o.log.warn({ err, buckets: dirty.length }, 'endpoint metrics: flush failed, will retry')
      return
    }
    for (const [key, t] of this.tallies)
      if (!t.dirty && t.bucket + RESOLUTIONS[t.resolution] <= now) this.tallies.delete(key)
    for (const [endpointId, c] of this.current)
      if (!this.tallies.has(`${endpointId} hour ${c.hour.bucket}`)) this.current.delete(endpointId)
    if (now - this.lastPrune >= PRUNE_EVERY_MS) {
      this.lastPrune = now
      const keep = { minute: 30 * 3_600_000, hour: 35 * 86_400_000, ...this.o.retentionMs }
      try {
        for (const r of ['minute', 'hour'] as const) await this.o.store.metrics.prune(r, now - keep[r])
      } catch (err) {
        this.o.log.warn({ err }, 'endpoint metrics: old buckets not pruned')
      }
    }
  }

  /** The metrics of `endpointIds` (summed) over `window` ending now, this replica's unflushed counts included. */
  async read(endpointId: string, window: MetricsWindow): Promise<EndpointMetrics> {
    const w = WINDOWS[window]
    const now = this.o.clock.now()
    const end = Math.floor(now / w.intervalMs) * w.intervalMs + w.intervalMs
    const start = end - w.spanMs
    const merged = await this.merged([endpointId], w.resolution, start, end, w.intervalMs)
    const times: number[] = []
    for (let t = start; t < end; t += w.intervalMs) times.push(t)
    const at = times.map((t) => merged.get(t) ?? {})
    const count = (name: Parameters<typeof addCount>[1]) => at.map((d) => d.c?.[name] ?? 0)
    const pct = (name: HistogramName) => ({
      p50: at.map((d) => quantile(d.h?.[name], 0.5)),
      p95: at.map((d) => quantile(d.h?.[name], 0.95)),
      p99: at.map((d) => quantile(d.h?.[name], 0.99)),
    })
    const gauge = (name: GaugeName) => at.map((d) => round2(average(d.g?.[name]) ?? 0))
    const sum = (xs: number[]) => xs.reduce((a, x) => a + x, 0)
    const jobs = {
      completed: count('completed'),
      failed: count('failed'),
      cancelled: count('cancelled'),
      timedOut: count('timedOut'),
    }
    const coldStarts = count('coldStarts')
    const requests = count('requests')
    return {
      endpointId,
      window,
      intervalSeconds: w.intervalMs / 1000,
      times,
      jobs,
      executionMs: pct('executionMs'),
      delayMs: pct('delayMs'),
      coldStarts: { count: coldStarts, durationMs: pct('coldStartMs') },
      workers: { running: gauge('workersRunning'), idle: gauge('workersIdle'), throttled: gauge('workersThrottled') },
      queueDepth: gauge('queueDepth'),
      requests: {
        total: requests,
        status2xx: count('status2xx'),
        status3xx: count('status3xx'),
        status4xx: count('status4xx'),
        status5xx: count('status5xx'),
        latencyMs: pct('latencyMs'),
      },
      totals: {
        completed: sum(jobs.completed),
        failed: sum(jobs.failed),
        cancelled: sum(jobs.cancelled),
        timedOut: sum(jobs.timedOut),
        coldStarts: sum(coldStarts),
        requests: sum(requests),
      },
    }
  }

  /** Jobs that reached a final status in the last hour over `endpointIds` (the account overview). */
  async jobsLastHour(endpointIds: readonly string[]): Promise<number> {
    const now = this.o.clock.now()
    const start = Math.floor((now - 3_600_000) / 60_000) * 60_000 + 60_000
    const merged = await this.merged(endpointIds, 'minute', start, now + 60_000, 3_600_000 * 2)
    let n = 0
    for (const d of merged.values())
      n += (d.c?.completed ?? 0) + (d.c?.failed ?? 0) + (d.c?.cancelled ?? 0) + (d.c?.timedOut ?? 0)
    return n
  }

  /** Stored rows of every replica, with this replica's rows replaced by what it holds in memory, merged per interval. */
  private async merged(
    endpointIds: readonly string[],
    resolution: Resolution,
    from: number,
    to: number,
    intervalMs: number,
  ): Promise<Map<number, BucketData>> {
    const ids = new Set(endpointIds)
    const mine = [...this.tallies.values()].filter(
      (t) => ids.has(t.endpointId) && t.resolution === resolution && t.bucket >= from && t.bucket < to,
    )
    const inMemory = new Set(mine.map((t) => `${t.endpointId} ${t.bucket}`))
    const stored = (await this.o.store.metrics.read(endpointIds, resolution, from, to)).filter(
      (r) => r.replica !== this.replica || !inMemory.has(`${r.endpointId} ${r.bucket}`),
    )
    const out = new Map<number, BucketData>()
    for (const r of [...stored, ...mine.map((t) => this.row(t))]) {
      const slot = Math.floor(r.bucket / intervalMs) * intervalMs
      let d = out.get(slot)
      if (!d) out.set(slot, (d = {}))
      mergeInto(d, r.data)
    }
    return out
  }

  private row(t: Tally): MetricRow {
    return { endpointId: t.endpointId, resolution: t.resolution, bucket: t.bucket, replica: this.replica, data: t.data }
  }

  /** Applies `fn` to the endpoint's current minute and hour buckets (looked up once per minute per endpoint). */
  private each(endpointId: string, fn: (d: BucketData) => void): void {
    const now = this.o.clock.now()
    const minute = now - (now % RESOLUTIONS.minute)
    let c = this.current.get(endpointId)
    if (!c || c.minute.bucket !== minute)
      this.current.set(
        endpointId,
        (c = {
          minute: this.tally(endpointId, 'minute', minute),
          hour: this.tally(endpointId, 'hour', now - (now % RESOLUTIONS.hour)),
        }),
      )
    c.minute.dirty = true
    c.hour.dirty = true
    fn(c.minute.data)
    fn(c.hour.data)
  }

  private tally(endpointId: string, resolution: Resolution, bucket: number): Tally {
    const key = `${endpointId} ${resolution} ${bucket}`
    let t = this.tallies.get(key)
    if (!t) this.tallies.set(key, (t = { endpointId, resolution, bucket, data: {}, dirty: true }))
    return t
  }
}

function round2(n: number): number {
  return Math.round(n * 100) / 100
}
