/**
 * Hangar's TypeScript worker SDK: write a handler, call `serve`, and the process speaks the same worker
 * protocol as the Python `runpod` SDK (take / take-batch, done, stream, ping, job-stop), configured by the
 * same environment variables the platform sets when it starts the worker.
 *
 * One extension the Python SDK never uses: with `concurrency` above 1 and HANGAR_WEBHOOK_POST_OUTPUT_BATCH
 * set (Hangar sets it), results of jobs that finish while another batch is being posted are sent together
 * in one job-done-batch request, each item meaning what its job-done post would (see ResultPoster). Results
 * over 1 MB, progress updates and stream chunks still go one by one; a control plane without the route
 * (404) gets single posts from then on.
 *
 * @example
 * import { serve } from 'hangar/worker'
 * serve({ handler: async (job) => ({ echo: job.input }) })
 */

import type { WorkerDoneBody, WorkerJob, WorkerJobBatch, WorkerJobsToStop } from '../contract/worker.js'
import { ResultPoster } from './results.js'
import { target, Transport, withQuery, type Target } from './transport.js'

export type { WorkerJob } from '../contract/worker.js'

/**
 * A job as handed to the handler: the whole object the platform sent (`WorkerJob` of the worker protocol),
 * plus a signal. `input` is typed `any` so handlers can read their own fields without a cast.
 */
export interface Job extends Omit<WorkerJob, 'input'> {
  input: any
  /** Aborted when the platform asks to stop this job (cancelled, timed out, expired) or the worker stops. */
  signal: AbortSignal
}

/**
 * Returns the output (any JSON value), throws (the job FAILS with the error's message), or is an async
 * generator whose values are streamed as chunks (the output is then the list of all of them).
 */
export type Handler = (job: Job) => unknown

export interface ServeOptions {
  handler: Handler
  /** Jobs run at once (default 1); above 1 jobs are taken in batches. */
  concurrency?: number
  /** Where the settings come from (default process.env). */
  env?: Record<string, string | undefined>
}

interface Settings {
  take: Target
  takeBatch: Target
  stop: Target
  done: JobTarget
  stream: JobTarget
  ping: Target | null
  key: string
  workerId: string
  pingIntervalMs: number
  http: Transport
  results: ResultPoster
}

/** A per-job URL parsed once: the path split where the job id goes. */
interface JobTarget {
  base: Target
  parts: string[]
}

const VERSION = 'hangar-worker/0.1.0'
let active: Settings | null = null

/** Sends a progress update for a running job; `/status` shows it as the job's output until it ends. */
export async function progress(job: Pick<Job, 'id'>, data: unknown): Promise<void> {
  if (!active) throw new Error('progress() works only inside serve()')
  await post(active, jobTarget(active.done, job.id, { isStream: 'false' }), { status: 'IN_PROGRESS', output: data })
}

/**
 * Runs the worker until the process is told to stop (SIGTERM/SIGINT), or rejects once the platform has not
 * answered any call for the orphan timeout (see `orphanTimeoutMs`): a worker whose control plane is gone
 * stops its jobs and ends instead of running on unseen. Without RUNPOD_WEBHOOK_GET_JOB it runs the handler once on `test_input.json` (or
 * `{"input": {}}`), prints the result and returns, like the Python SDK's local test mode.
 */
export async function serve(opts: ServeOptions): Promise<void> {
  const env = opts.env ?? process.env
  if (!env.RUNPOD_WEBHOOK_GET_JOB) return localTest(opts.handler)
  let lastAnswer = Date.now()
  const concurrency = Math.max(1, opts.concurrency ?? 1)
  const takeUrl = env.RUNPOD_WEBHOOK_GET_JOB
  const workerId = env.RUNPOD_POD_ID ?? ''
  const done = jobTemplate(required(env, 'RUNPOD_WEBHOOK_POST_OUTPUT'), workerId)
  const key = required(env, 'RUNPOD_AI_API_KEY')
  // A connection per running job (its result), plus the take, stop and ping calls.
  const http = new Transport(concurrency + 3, () => (lastAnswer = Date.now()))
  // One job at a time finishes one at a time: nothing to batch.
  const batchUrl = concurrency > 1 ? env.HANGAR_WEBHOOK_POST_OUTPUT_BATCH : undefined
  const s: Settings = {
    take: target(takeUrl),
    takeBatch: target(takeUrl.replace('/job-take/', '/job-take-batch/')),
    stop: target(takeUrl.replace('/job-take/', '/job-stop/')),
    done,
    stream: jobTemplate(required(env, 'RUNPOD_WEBHOOK_POST_STREAM'), workerId),
    ping: env.RUNPOD_WEBHOOK_PING ? target(env.RUNPOD_WEBHOOK_PING) : null,
    key,
    workerId,
    pingIntervalMs: Math.max(100, Number(env.RUNPOD_PING_INTERVAL ?? 10_000) || 10_000),
    http,
    results: new ResultPoster({
      http,
      key,
      single: (jobId, isStream) => jobTarget(done, jobId, { isStream: String(isStream) }),
      batch: batchUrl ? target(batchUrl.replaceAll('$RUNPOD_POD_ID', workerId)) : null,
    }),
  }
  active = s
  const running = new Map<string, AbortController>()
  let stopping = false
  let slotFreed: (() => void) | null = null
  const stopAll = () => {
    stopping = true
    for (const c of running.values()) c.abort(new Error('the worker is stopping'))
  }
  process.once('SIGTERM', () => {
    stopAll()
    setTimeout(() => process.exit(0), 50).unref()
  })
  process.once('SIGINT', stopAll)

  // A ping that fails (the control plane restarting) is retried at the next interval; the watchdog ends a worker
  // that cannot reach it for long, so a failure needs no handling here.
  const pinger = s.ping ? setInterval(() => void ping(s, [...running.keys()]).catch(() => {}), s.pingIntervalMs) : null
  if (s.ping) void ping(s, []).catch(() => {})
  void stopChannel(s, running, () => stopping)

  // The orphan watchdog: the platform answers a ping at once and a take within its hold time, so silence
  // past the limit means it is gone (crashed, or cut off): stop the jobs, close the connections, and end.
  const limitMs = orphanTimeoutMs(env, s.ping !== null, s.pingIntervalMs)
  let orphaned: (err: Error) => void = () => {}
  const orphan = new Promise<never>((_, reject) => (orphaned = reject))
  const watchdog = setInterval(
    () => {
      const silentMs = Date.now() - lastAnswer
      if (silentMs <= limitMs) return
      stopAll()
      s.http.destroy()
      orphaned(
        new Error(
          `the platform has not answered for ${silentMs} ms (the limit is ${limitMs} ms): stopping this worker`,
        ),
      )
    },
    Math.min(1_000, Math.max(100, limitMs / 4)),
  )

  const loop = async () => {
    while (!stopping) {
      if (running.size >= concurrency) {
        await new Promise<void>((r) => (slotFreed = r))
        continue
      }
      let jobs: WorkerJobBatch
      try {
        jobs = await take(s, concurrency - running.size, running.size > 0, concurrency > 1)
      } catch {
        // Unreachable for now: try again; the watchdog ends the worker if it stays so.
        await sleep(1_000)
        continue
      }
      for (const raw of jobs) {
        const controller = new AbortController()
        running.set(raw.id, controller)
        void runJob(s, opts.handler, { ...raw, signal: controller.signal }).finally(() => {
          running.delete(raw.id)
          slotFreed?.()
          slotFreed = null
        })
      }
    }
  }
  try {
    await Promise.race([loop(), orphan])
  } finally {
    clearInterval(watchdog)
    if (pinger) clearInterval(pinger)
    active = null
  }
}

/**
 * How long the worker waits for any answer from the platform before taking it for gone:
 * HANGAR_ORPHAN_TIMEOUT_MS when set (but at least 2 ping intervals + 1 s), else 3 ping intervals but at least
 * 30 s; without pings 90 s (a take is held at most 80 s).
 */
export function orphanTimeoutMs(
  env: Record<string, string | undefined>,
  pings: boolean,
  pingIntervalMs: number,
): number {
  const set = Number(env.HANGAR_ORPHAN_TIMEOUT_MS)
  // Never shorter than the silence a live platform can leave: two ping intervals, or a held take.
  const floor = pings ? 2 * pingIntervalMs + 1_000 : 90_000
  if (Number.isFinite(set) && set > 0) return Math.max(set, floor)
  return pings ? Math.max(30_000, 3 * pingIntervalMs) : 90_000
}

async function runJob(s: Settings, handler: Handler, job: Job): Promise<void> {
  let body: WorkerDoneBody
  let isStream = false
  try {
    const result = handler(job)
    if (isAsyncIterable(result)) {
      isStream = true
      const all: unknown[] = []
      for await (const chunk of result) {
        if (job.signal.aborted) break
        all.push(chunk)
        await post(s, jobTarget(s.stream, job.id), { output: chunk })
      }
      body = { output: all }
    } else {
      body = { output: await result }
    }
  } catch (err) {
    body = { error: err instanceof Error ? err.message : String(err) }
  }
  // A job the platform stopped is no longer this worker's: its result would be ignored.
  if (job.signal.aborted) return
  await s.results.post(job.id, body, isStream)
}

async function take(s: Settings, max: number, busy: boolean, batch: boolean): Promise<WorkerJobBatch> {
  const t = withQuery(batch ? s.takeBatch : s.take, {
    ...(batch ? { batch_size: String(max) } : {}),
    job_in_progress: busy ? '1' : '0',
  })
  const res = await s.http.get(t, s.key, 90_000)
  if (res.status !== 200) await res.drop()
  if (res.status === 204 || res.status === 400) return []
  if (res.status === 429) {
    await sleep(5_000)
    return []
  }
  if (res.status !== 200) throw new Error(`job-take answered HTTP ${res.status}`)
  const body = (await res.json()) as WorkerJob | WorkerJobBatch
  return Array.isArray(body) ? body : [body]
}

async function stopChannel(s: Settings, running: Map<string, AbortController>, stopping: () => boolean): Promise<void> {
  while (!stopping()) {
    try {
      const res = await s.http.get(s.stop, s.key, 90_000)
      if (res.status === 200) {
        const body = (await res.json()) as Partial<WorkerJobsToStop>
        for (const id of body.jobsToStop ?? []) running.get(id)?.abort(new Error('the platform stopped this job'))
      } else {
        await res.drop()
        if (res.status !== 204) await sleep(1_000)
      }
    } catch {
      // Unreachable for now: ask again shortly (the stop channel is a long-poll, retried as long as we run).
      await sleep(1_000)
    }
  }
}

async function ping(s: Settings, jobIds: string[]): Promise<void> {
  const params: Record<string, string> = { runpod_version: VERSION }
  if (jobIds.length) params.job_id = jobIds.join(',')
  const res = await s.http.get(withQuery(s.ping!, params), s.key, 10_000)
  await res.drop()
}

async function post(s: Settings, t: Target, body: unknown): Promise<void> {
  const res = await s.http.post(t, s.key, body, 30_000)
  await res.drop()
  if (res.status < 200 || res.status > 299) throw new Error(`${t.path.split('?')[0]} answered HTTP ${res.status}`)
}

/** Parses a per-job URL once, with `$RUNPOD_POD_ID` filled in (as the Python SDK does). */
function jobTemplate(url: string, workerId: string): JobTarget {
  const t = target(url.replaceAll('$RUNPOD_POD_ID', workerId))
  return { base: t, parts: t.path.split('$ID') }
}

/** Fills `$ID` with the job id and adds query parameters. */
function jobTarget(t: JobTarget, jobId: string, params: Record<string, string> = {}): Target {
  return withQuery({ ...t.base, path: t.parts.join(encodeURIComponent(jobId)) }, params)
}

async function localTest(handler: Handler): Promise<void> {
  const { readFile } = await import('node:fs/promises')
  let input: unknown = {}
  try {
    input = (JSON.parse(await readFile('test_input.json', 'utf8')) as { input?: unknown }).input ?? {}
  } catch {
    // no test input: an empty one
  }
  const job: Job = { id: 'local-test', input, signal: new AbortController().signal }
  const result = handler(job)
  const output = isAsyncIterable(result) ? await collect(result) : await result
  console.log(JSON.stringify({ output }))
}

async function collect(it: AsyncIterable<unknown>): Promise<unknown[]> {
  const out: unknown[] = []
  for await (const x of it) out.push(x)
  return out
}

function isAsyncIterable(v: unknown): v is AsyncIterable<unknown> {
  return typeof v === 'object' && v !== null && Symbol.asyncIterator in v
}

function required(env: Record<string, string | undefined>, name: string): string {
  const v = env[name]
  if (!v) throw new Error(`${name} is not set: the platform sets it when it starts the worker`)
  return v
}

/** Resolves after `ms`, or early when `signal` aborts (then rejects with its reason). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const t = setTimeout(resolve, ms)
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t)
        reject(signal.reason)
      },
      { once: true },
    )
  })
}

export { openai, openAiCall, openAiError, type OpenAiCall, type OpenAiHandler } from './openai.js'
