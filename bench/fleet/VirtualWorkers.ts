import { Agent, type Dispatcher, request } from 'undici'

/** What the Python SDK says it is on pings (the release kept in ../shared/clients/runpod-python). */
const SDK_VERSION = '1.12.0'

/** How virtual workers behave; every worker of one VirtualWorkers shares it. */
export interface VirtualWorkerOptions {
  /** How long a job runs, ms (given the job, so one endpoint can be slower than another). */
  jobMs: number | ((job: { id: string; input: unknown }) => number)
  /** Chunks posted to job-stream while a job runs (evenly spread over its time). */
  streamChunks?: number
  /** Posts one progress update (`IN_PROGRESS`) half-way through each job. */
  progress?: boolean
  /** Holds the job-stop long poll open, as SDK 1.12 does (on by default). */
  stopChannel?: boolean
  /** Connections of the shared agent (held job-takes and job-stops each keep one). */
  connections?: number
  /**
   * ms from a worker's start to its first call, drawn uniformly from this range: a Python worker takes about
   * a second to import the SDK and its handler (default 500-2,000 ms; `[0, 0]`: at once).
   */
  bootMs?: [number, number]
}

/** A job a virtual worker ran, counted when it was taken. */
export interface Execution {
  workerId: string
  at: number
  /** Its result was accepted (job-done answered 2xx). */
  done: boolean
}

/** Figures of the protocol calls made so far. */
export interface ProtocolStats {
  takes: number
  /** Take answers with a job, and the ms each took from request to answer. */
  takeMsWithJob: number[]
  pings: number
  dones: number
  /** ms from a job-done post to its answer. */
  doneMs: number[]
  streams: number
  errors: number
  firstError: string | null
}

/**
 * Many serverless workers on one event loop, each speaking the worker protocol as the Python `runpod` SDK
 * (1.12) does with concurrency 1: it pings `RUNPOD_WEBHOOK_PING` at once and then every
 * `RUNPOD_PING_INTERVAL` (whole seconds) with the ids of its running jobs; it long-polls the job-take URL
 * (`&job_in_progress=0|1`), asking again at once on 204, after 5 s on 429, and while a job runs it looks
 * again each second (its queue is full); it holds the job-stop channel open; a finished job is posted to
 * job-done as JSON labelled `application/x-www-form-urlencoded` with `X-Request-ID`, `&isStream=false`,
 * retried up to 3 times. Every job taken is counted, so a run can tell a job run twice from one never run.
 */
export class VirtualWorkers {
  readonly agent: Dispatcher
  private readonly workers = new Map<string, VirtualWorker>()
  /** Job id -> each time a worker took it. */
  readonly executions = new Map<string, Execution[]>()
  readonly stats: ProtocolStats = {
    takes: 0,
    takeMsWithJob: [],
    pings: 0,
    dones: 0,
    doneMs: [],
    streams: 0,
    errors: 0,
    firstError: null,
  }

  constructor(readonly opts: VirtualWorkerOptions) {
    this.agent = new Agent({
      connections: opts.connections ?? 20_000,
      keepAliveTimeout: 120_000,
      // Held long polls: the control plane answers within its take wait (well under the SDK's 600 s).
      headersTimeout: 0,
      bodyTimeout: 0,
    })
  }

  /** Starts a worker from the env its runtime was given; `onExit` is told once it has ended. */
  start(id: string, env: Record<string, string>, onExit?: () => void): void {
    if (this.workers.has(id)) return
    const w = new VirtualWorker(this, id, env, () => {
      this.workers.delete(id)
      onExit?.()
    })
    this.workers.set(id, w)
    w.run()
  }

  /** Ends a worker because its runtime stopped it (Hangar asked): nothing more is sent. */
  end(id: string): void {
    this.workers.get(id)?.end()
  }

  /** Loses a worker (its host went away): nothing more is sent, its running job is abandoned. */
  stop(id: string): void {
    const w = this.workers.get(id)
    if (!w) return
    this.lost.add(id)
    w.end()
  }

  /** Workers now running. */
  get size(): number {
    return this.workers.size
  }

  ids(): string[] {
    return [...this.workers.keys()]
  }

  /** Workers with a job now. */
  busy(): number {
    let n = 0
    for (const w of this.workers.values()) if (w.job) n++
    return n
  }

  /**
   * Jobs taken more than once, and how many jobs were taken at all. `rerun` are jobs run again after a run
   * whose worker was lost before its result was in (the platform gives such a job back); `twice` are the
   * others: a job run again although a run had finished it, or two runs at once.
   */
  duplicates(): { taken: number; twice: string[]; rerun: number } {
    const twice: string[] = []
    let rerun = 0
    for (const [id, runs] of this.executions) {
      if (runs.length < 2) continue
      const finished = runs.filter((r) => r.done).length
      const earlierLost = runs.slice(0, -1).every((r) => !r.done && this.lost.has(r.workerId))
      if (finished <= 1 && earlierLost) rerun++
      else twice.push(id)
    }
    return { taken: this.executions.size, twice, rerun }
  }

  /** Workers ended by `stop` (lost): their unfinished jobs may run again elsewhere. */
  private readonly lost = new Set<string>()

  /** @internal */
  error(what: string, err: unknown): void {
    this.stats.errors++
    this.stats.firstError ??= `${what}: ${err instanceof Error ? err.message : String(err)}`
  }

  /**
   * Forgets the jobs taken, the lost workers and the protocol figures, so that the next scenario on the same
   * fleet counts only its own. Only while no worker runs (their late answers would be counted).
   */
  reset(): void {
    if (this.workers.size) throw new Error(`reset with ${this.workers.size} workers running`)
    this.executions.clear()
    this.lost.clear()
    Object.assign(this.stats, {
      takes: 0,
      takeMsWithJob: [],
      pings: 0,
      dones: 0,
      doneMs: [],
      streams: 0,
      errors: 0,
      firstError: null,
    })
  }

  async close(): Promise<void> {
    for (const w of [...this.workers.values()]) w.end()
    await this.agent.close()
  }
}

class VirtualWorker {
  job: { id: string; input: unknown } | null = null
  private ended = false
  private readonly aborts = new AbortController()
  private readonly timers = new Set<NodeJS.Timeout>()
  private readonly headers: Record<string, string>
  private readonly takeUrl: string
  private readonly stopUrl: string | null
  private readonly doneUrl: string
  private readonly streamUrl: string
  private readonly pingUrl: string
  private readonly pingMs: number

  constructor(
    private readonly fleet: VirtualWorkers,
    readonly id: string,
    env: Record<string, string>,
    private readonly onEnd: () => void,
  ) {
    const need = (k: string) => {
      const v = env[k]
      if (!v) throw new Error(`virtual worker ${id}: ${k} is not set`)
      return v
    }
    this.takeUrl = need('RUNPOD_WEBHOOK_GET_JOB').replaceAll('$ID', id)
    this.stopUrl = this.takeUrl.includes('/job-take/') ? this.takeUrl.replace('/job-take/', '/job-stop/') : null
    this.doneUrl = need('RUNPOD_WEBHOOK_POST_OUTPUT').replaceAll('$RUNPOD_POD_ID', id)
    this.streamUrl = need('RUNPOD_WEBHOOK_POST_STREAM').replaceAll('$RUNPOD_POD_ID', id)
    this.pingUrl = need('RUNPOD_WEBHOOK_PING').replaceAll('$RUNPOD_POD_ID', id)
    // int(RUNPOD_PING_INTERVAL) // 1000 seconds, as the SDK's heartbeat reads it.
    this.pingMs = Math.floor(Number(env.RUNPOD_PING_INTERVAL ?? 10_000) / 1000) * 1000
    this.headers = { authorization: need('RUNPOD_AI_API_KEY'), 'user-agent': `RunPod-Python-SDK/${SDK_VERSION}` }
  }

  run(): void {
    const [lo, hi] = this.fleet.opts.bootMs ?? [500, 2_000]
    const boot = lo + Math.random() * (hi - lo)
    if (boot <= 0) return this.begin()
    const t = setTimeout(() => {
      this.timers.delete(t)
      this.begin()
    }, boot)
    this.timers.add(t)
  }

  private begin(): void {
    if (this.ended) return
    this.pingLoop()
    void this.takeLoop()
    if (this.stopUrl && this.fleet.opts.stopChannel !== false) void this.stopLoop(this.stopUrl)
  }

  end(): void {
    if (this.ended) return
    this.ended = true
    for (const t of this.timers) clearTimeout(t)
    this.aborts.abort()
    this.onEnd()
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.timers.delete(t)
        resolve()
      }, ms)
      this.timers.add(t)
    })
  }

  private async call(
    method: 'GET' | 'POST',
    url: string,
    opts: { body?: string; headers?: Record<string, string> } = {},
  ): Promise<{ status: number; json: unknown; contentType: string }> {
    const res = await request(url, {
      method,
      dispatcher: this.fleet.agent,
      headers: { ...this.headers, ...opts.headers },
      body: opts.body,
      signal: this.aborts.signal,
    })
    const contentType = String(res.headers['content-type'] ?? '')
    const text = await res.body.text()
    return { status: res.statusCode, contentType, json: text && contentType.includes('json') ? JSON.parse(text) : null }
  }

  private pingLoop(): void {
    const ping = () => {
      if (this.ended) return
      const q = this.job ? `&job_id=${encodeURIComponent(this.job.id)}` : ''
      this.fleet.stats.pings++
      // The SDK pings from a process of its own: a slow answer does not delay the next ping.
      this.call('GET', `${this.pingUrl}${q}&runpod_version=${SDK_VERSION}`).catch((err) => {
        if (!this.ended) this.fleet.error('ping', err)
      })
      const t = setTimeout(() => {
        this.timers.delete(t)
        ping()
      }, this.pingMs)
      this.timers.add(t)
    }
    ping()
  }

  private async takeLoop(): Promise<void> {
    while (!this.ended) {
      if (this.job) {
        // Concurrency 1: the queue is full while a job runs; the SDK looks again every second.
        await this.sleep(1000)
        continue
      }
      try {
        this.fleet.stats.takes++
        const t0 = performance.now()
        const r = await this.call('GET', `${this.takeUrl}&job_in_progress=0`)
        if (this.ended) return
        if (r.status === 429) {
          await this.sleep(5000)
          continue
        }
        if (r.status === 204 || r.status === 400) continue
        if (r.status !== 200) throw new Error(`job-take answered ${r.status}`)
        // The SDK drops an answer not labelled JSON (the job is then never run).
        if (!r.contentType.includes('application/json')) continue
        const jobs = Array.isArray(r.json) ? r.json : [r.json]
        const job = jobs[0] as { id: string; input: unknown }
        this.fleet.stats.takeMsWithJob.push(performance.now() - t0)
        this.runJob(job)
      } catch (err) {
        if (this.ended) return
        this.fleet.error('take', err)
        // The SDK asks again at once; a control plane that is gone would make that a spin.
        await this.sleep(1000)
      }
    }
  }

  private async stopLoop(url: string): Promise<void> {
    while (!this.ended) {
      try {
        const r = await this.call('GET', url)
        if (this.ended) return
        if (r.status === 429) await this.sleep(5000)
        else if (r.status === 200) {
          const ids = (r.json as { jobsToStop?: string[] }).jobsToStop ?? []
          // The SDK cancels the handler's task: nothing is posted for that job.
          if (this.job && ids.includes(this.job.id)) this.job = null
        } else if (r.status !== 204) await this.sleep(1000)
      } catch (err) {
        if (this.ended) return
        this.fleet.error('stop channel', err)
        await this.sleep(1000)
      }
    }
  }

  private runJob(job: { id: string; input: unknown }): void {
    this.job = job
    const runs = this.fleet.executions.get(job.id)
    const run: Execution = { workerId: this.id, at: Date.now(), done: false }
    if (runs) runs.push(run)
    else this.fleet.executions.set(job.id, [run])
    const o = this.fleet.opts
    const ms = typeof o.jobMs === 'function' ? o.jobMs(job) : o.jobMs
    void (async () => {
      const chunks = o.streamChunks ?? 0
      const steps = chunks + (o.progress ? 1 : 0)
      for (let i = 0; i < steps; i++) {
        await this.sleep(ms / (steps + 1))
        if (this.job !== job) return
        if (o.progress && i === 0) await this.post(this.doneUrl, job.id, { status: 'IN_PROGRESS', output: 'half' })
        else await this.post(this.streamUrl, job.id, { output: { chunk: i } }, 'stream')
      }
      await this.sleep(steps ? ms / (steps + 1) : ms)
      if (this.job !== job) return
      run.done = await this.post(this.doneUrl, job.id, { output: { ok: true, by: this.id } })
      if (this.job === job) this.job = null
    })()
  }

  /** `_transmit`: JSON text labelled form-urlencoded, `X-Request-ID`, up to 3 attempts. */
  private async post(
    template: string,
    jobId: string,
    data: unknown,
    kind: 'done' | 'stream' = 'done',
  ): Promise<boolean> {
    const url = `${template.replaceAll('$ID', jobId)}&isStream=false`
    const body = JSON.stringify(data)
    for (let attempt = 1; attempt <= 3 && !this.ended; attempt++) {
      try {
        const t0 = performance.now()
        const r = await this.call('POST', url, {
          body,
          headers: { 'content-type': 'application/x-www-form-urlencoded', charset: 'utf-8', 'x-request-id': jobId },
        })
        if (r.status >= 200 && r.status < 300) {
          if (kind === 'done') {
            this.fleet.stats.dones++
            this.fleet.stats.doneMs.push(performance.now() - t0)
          } else this.fleet.stats.streams++
          return true
        }
        if (attempt === 3) this.fleet.error(kind, new Error(`${kind} answered ${r.status}`))
      } catch (err) {
        if (this.ended) return false
        if (attempt === 3) this.fleet.error(kind, err)
      }
      await this.sleep(attempt * 1000)
    }
    return false
  }
}
