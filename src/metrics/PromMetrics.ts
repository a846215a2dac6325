import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { JobStatus } from '../contract/job.js'
import type { Metrics, WebhookOutcome } from '../services/Metrics.js'
import type { JobCounts } from '../store/JobStore.js'

/** Workers of one endpoint by the status GET .../workers shows. */
export interface WorkerCounts {
  endpointId: string
  byStatus: Record<string, number>
}

/** What the scrape-time gauges read (called only when /metrics is scraped); live workers come later, see `countWorkers`. */
export interface PromMetricsOptions {
  /** Job counts of every endpoint (waiting, running, kept finished ones, the oldest wait). */
  jobCounts: () => Promise<Array<{ endpointId: string } & JobCounts>>
  /** Epoch ms on the same clock as `oldestQueuedAt`. */
  now: () => number
  /** Every endpoint's name and type (the `hangar_endpoint_info` series); none when absent. */
  endpoints?: () => Promise<Array<{ id: string; name: string; type: string }>>
  /** Every pod with its status and live use (the `hangar_pods` and `hangar_pod_*` series); none when absent. */
  pods?: () => Promise<PodSample[]>
  /** Process metrics (CPU, memory, event-loop lag); default true. */
  processMetrics?: boolean
}

/** What the pod gauges read of a pod (the API's Pod has these fields). */
export interface PodSample {
  id: string
  name: string
  status: string
  runtime: { cpu: { util: number }; memory: { util: number }; gpus: Array<{ util: number }> } | null
}

/** How a request is labelled: the route pattern (`/v2/:endpointId/run`), never the raw URL, so ids do not explode the series. */
export interface HttpObservation {
  method: string
  route: string
  statusCode: number
  seconds: number
}

/** The statuses the workers gauge always reports, so a series reads 0 rather than vanishing. */
const WORKER_STATUSES = ['RUNNING', 'IDLE', 'INITIALIZING', 'THROTTLED', 'UNHEALTHY'] as const
const POD_STATUSES = ['PROVISIONING', 'STARTING', 'RUNNING', 'EXITED', 'ERROR', 'TERMINATED'] as const

const SECONDS_FAST = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]
const SECONDS_SLOW = [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600]
const SECONDS_JOB = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600]

/**
 * The Prometheus view of Hangar, on its own registry (several servers can live in one process). Counters
 * and histograms are pushed where events happen (through the `Metrics` port and the HTTP hook); gauges
 * are computed from live state when scraped, so they cost nothing between scrapes.
 */
export class PromMetrics implements Metrics {
  readonly registry = new Registry()
  private readonly jobsFinished: Counter<'endpoint' | 'status'>
  private readonly jobDuration: Histogram<'endpoint' | 'status'>
  private readonly coldStart: Histogram<'endpoint'>
  private readonly webhooks: Counter<'outcome'>
  private readonly http: Histogram<'method' | 'route' | 'status_code'>
  private readonly refusals: Counter<'scope'>
  // Series looked up once per label set: prom-client hashes the labels on every call otherwise, and these
  // two are called once per request and once per job. (Counters and histograms are never reset.)
  private readonly httpChildren = new Map<string, ReturnType<Histogram<'method' | 'route' | 'status_code'>['labels']>>()
  /** Workers of every endpoint that has some (none until `countWorkers`). */
  private workerCounts: () => WorkerCounts[] = () => []
  private readonly finishedChildren = new Map<
    string,
    {
      count: ReturnType<Counter<'endpoint' | 'status'>['labels']>
      duration: ReturnType<Histogram<'endpoint' | 'status'>['labels']>
    }
  >()

  constructor(opts: PromMetricsOptions) {
    const registers = [this.registry]
    if (opts.processMetrics !== false) collectDefaultMetrics({ register: this.registry })
    this.jobsFinished = new Counter({
      name: 'hangar_jobs_finished_total',
      help: 'Jobs that reached a final status',
      labelNames: ['endpoint', 'status'],
      registers,
    })
    this.jobDuration = new Histogram({
      name: 'hangar_job_duration_seconds',
      help: 'Execution time of finished jobs that started (startedAt to completedAt)',
      labelNames: ['endpoint', 'status'],
      buckets: SECONDS_JOB,
      registers,
    })
    this.coldStart = new Histogram({
      name: 'hangar_worker_cold_start_seconds',
      help: 'From asking the runtime for a worker to its first call-in',
      labelNames: ['endpoint'],
      buckets: SECONDS_SLOW,
      registers,
    })
    this.webhooks = new Counter({
      name: 'hangar_webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome: delivered, retry (failed, will be tried again), failed (gave up)',
      labelNames: ['outcome'],
      registers,
    })
    this.http = new Histogram({
      name: 'hangar_http_request_duration_seconds',
      help: 'HTTP request latency by route pattern',
      labelNames: ['method', 'route', 'status_code'],
      buckets: SECONDS_FAST,
      registers,
    })
    this.refusals = new Counter({
      name: 'hangar_rate_limit_refusals_total',
      help: 'Requests refused with 429: management quota or per-endpoint job-operation limits',
      labelNames: ['scope'],
      registers,
    })

    // One read of the job counts feeds three gauges: the first gauge collected in a scrape reads, the others reuse it.
    let pending: Promise<Array<{ endpointId: string } & JobCounts>> | undefined
    const counts = () => (pending ??= opts.jobCounts().finally(() => queueMicrotask(() => (pending = undefined))))
    new Gauge({
      name: 'hangar_jobs',
      help: 'Jobs kept now by status (finished ones until their retention ends)',
      labelNames: ['endpoint', 'status'],
      registers,
      async collect() {
        this.reset()
        for (const c of await counts()) {
          this.set({ endpoint: c.endpointId, status: 'IN_QUEUE' }, c.inQueue)
          this.set({ endpoint: c.endpointId, status: 'IN_PROGRESS' }, c.inProgress)
          this.set({ endpoint: c.endpointId, status: 'COMPLETED' }, c.completed)
          this.set({ endpoint: c.endpointId, status: 'FAILED' }, c.failed)
        }
      },
    })
    new Gauge({
      name: 'hangar_queue_depth',
      help: 'Jobs waiting for a worker (low priority included)',
      labelNames: ['endpoint'],
      registers,
      async collect() {
        this.reset()
        for (const c of await counts()) this.set({ endpoint: c.endpointId }, c.inQueue)
      },
    })
    new Gauge({
      name: 'hangar_queue_oldest_wait_seconds',
      help: 'How long the oldest waiting normal-priority job has waited (0 when none waits)',
      labelNames: ['endpoint'],
      registers,
      async collect() {
        this.reset()
        const now = opts.now()
        for (const c of await counts())
          this.set(
            { endpoint: c.endpointId },
            c.oldestQueuedAt === null ? 0 : Math.max(0, now - c.oldestQueuedAt) / 1000,
          )
      },
    })
    const workerCounts = () => this.workerCounts()
    new Gauge({
      name: 'hangar_workers',
      help: 'Workers by status (RUNNING, IDLE, INITIALIZING, THROTTLED, UNHEALTHY)',
      labelNames: ['endpoint', 'status'],
      registers,
      async collect() {
        this.reset()
        // Every endpoint, with or without workers: a count that drops to zero reads 0 instead of vanishing.
        const live = new Map(workerCounts().map((w) => [w.endpointId, w.byStatus]))
        const ids = new Set([...(await counts()).map((c) => c.endpointId), ...live.keys()])
        for (const endpoint of ids)
          for (const status of WORKER_STATUSES) this.set({ endpoint, status }, live.get(endpoint)?.[status] ?? 0)
      },
    })
    const endpoints = opts.endpoints
    if (endpoints) {
      new Gauge({
        name: 'hangar_endpoint_info',
        help: 'Always 1: the name and type of each endpoint, to join on the endpoint label (e.g. `* on(endpoint) group_left(name) hangar_endpoint_info`)',
        labelNames: ['endpoint', 'name', 'type'],
        registers,
        async collect() {
          this.reset()
          for (const e of await endpoints()) this.set({ endpoint: e.id, name: e.name, type: e.type }, 1)
        },
      })
    }
    const podsNow = opts.pods
    if (podsNow) {
      // One read of the pods feeds every pod gauge of a scrape, as with the job counts above.
      let pendingPods: Promise<PodSample[]> | undefined
      const pods = () => (pendingPods ??= podsNow().finally(() => queueMicrotask(() => (pendingPods = undefined))))
      new Gauge({
        name: 'hangar_pods',
        help: 'Pods by status (every status listed, 0 when none)',
        labelNames: ['status'],
        registers,
        async collect() {
          this.reset()
          const all = await pods()
          for (const status of POD_STATUSES) this.set({ status }, all.filter((p) => p.status === status).length)
        },
      })
      const perPod = (name: string, help: string, read: (r: NonNullable<PodSample['runtime']>) => number | undefined) =>
        new Gauge({
          name,
          help,
          labelNames: ['pod', 'name'],
          registers,
          async collect() {
            this.reset()
            for (const p of await pods()) {
              const v = p.runtime ? read(p.runtime) : undefined
              if (v !== undefined) this.set({ pod: p.id, name: p.name }, v)
            }
          },
        })
      perPod('hangar_pod_cpu_percent', 'CPU use of each RUNNING pod, percent of its vCPUs', (r) => r.cpu.util)
      perPod('hangar_pod_memory_percent', 'Memory use of each RUNNING pod, percent of its memory', (r) => r.memory.util)
      perPod(
        'hangar_pod_gpu_percent',
        'Average GPU use of each RUNNING pod with real GPUs (none for simulated ones)',
        (r) => (r.gpus.length ? r.gpus.reduce((a, g) => a + g.util, 0) / r.gpus.length : undefined),
      )
    }
  }

  /**
   * Where the workers gauge reads live workers. Given after construction: the worker service reports cold
   * starts to these metrics, so it is built after them.
   */
  countWorkers(counts: () => WorkerCounts[]): void {
    this.workerCounts = counts
  }

  jobFinished(endpointId: string, status: JobStatus, runMs: number | null): void {
    const key = `${endpointId} ${status}`
    let c = this.finishedChildren.get(key)
    if (!c)
      this.finishedChildren.set(
        key,
        (c = {
          count: this.jobsFinished.labels(endpointId, status),
          duration: this.jobDuration.labels(endpointId, status),
        }),
      )
    c.count.inc()
    if (runMs !== null) c.duration.observe(Math.max(0, runMs) / 1000)
  }

  workerReady(endpointId: string, coldStartMs: number): void {
    this.coldStart.observe({ endpoint: endpointId }, Math.max(0, coldStartMs) / 1000)
  }

  webhookAttempt(outcome: WebhookOutcome): void {
    this.webhooks.inc({ outcome })
  }

  httpRequest(o: HttpObservation): void {
    const key = `${o.method} ${o.route} ${o.statusCode}`
    let child = this.httpChildren.get(key)
    if (!child) this.httpChildren.set(key, (child = this.http.labels(o.method, o.route, String(o.statusCode))))
    child.observe(o.seconds)
  }

  rateLimited(scope: 'management' | 'job_operation'): void {
    this.refusals.inc({ scope })
  }

  /**
   * The text exposition format and its content type. prom-client writes a NaN value (the event-loop lag
   * before its first sample) as `Nan`; the format spells it `NaN`, and strict parsers refuse anything else.
   */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: (await this.registry.metrics()).replace(/ Nan$/gm, ' NaN') }
  }
}
