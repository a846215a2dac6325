import autocannon from 'autocannon'
import { Pool } from 'undici'
import { execSync, spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir, totalmem } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = fileURLToPath(new URL('..', import.meta.url))
/**
 * Where the measured Hangar (bin/, dist/, bench/workers/) lives: this checkout, or another build of it given
 * by HANGAR_BENCH_SERVER_ROOT (to measure a before/after pair back to back under the same conditions).
 */
export const SERVER_ROOT = process.env.HANGAR_BENCH_SERVER_ROOT ?? ROOT

/** One reported figure of a workload. */
export interface Row {
  workload: string
  metric: string
  value: number
  unit: string
  goal?: string
  met?: boolean
  note?: string
}

export interface BenchContext {
  quick: boolean
  /** Extra markdown (tables) a workload adds to the report after the main table. */
  sections: string[]
  /** Results shared between workloads of one invocation (workload 2 compares itself with workload 1). */
  shared: Record<string, number>
}

/** Options of a bench server process. */
export interface ServerOptions {
  /** Extra node flags, e.g. --cpu-prof. */
  nodeArgs?: string[]
  /** Port to listen on (0: any free one). */
  port?: number
  /** Another server's dataDir, to run a replica of it (PostgreSQL): its admin key is read there, and the dir is left to that server. */
  dataDir?: string
  /** CPUs the server may run on (`taskset -c` list, e.g. "0"): a core budget of its own. */
  cpus?: string
}

/** A `hangar serve` child process on a fresh data dir, as a user would run it. */
export interface BenchServer {
  url: string
  adminKey: string
  child: ChildProcess
  dataDir: string
  /** The SQLite file of the server (read-only inspection after a run). */
  dbFile: string
  api<T = any>(method: string, path: string, body?: unknown, key?: string): Promise<{ status: number; body: T }>
  stop(): Promise<void>
}

export async function startServer(
  config: Record<string, unknown> = {},
  env: Record<string, string> = {},
  opts: ServerOptions = {},
): Promise<BenchServer> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'hangar-bench-'))
  const configFile = join(dataDir, 'config.json')
  writeFileSync(configFile, JSON.stringify(config))
  const args = [
    ...(opts.nodeArgs ?? []),
    join(SERVER_ROOT, 'bin/hangar.js'),
    'serve',
    '--port',
    String(opts.port ?? 0),
    '--data-dir',
    join(dataDir, 'data'),
    '--config',
    configFile,
  ]
  // taskset execs node in its own process: the pid is the server's.
  const child = spawn(
    opts.cpus === undefined ? process.execPath : 'taskset',
    opts.cpus === undefined ? args : ['-c', opts.cpus, process.execPath, ...args],
    {
      env: { ...process.env, HANGAR_LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  )
  let out = ''
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      out += d
      const m = /listening on (http:\/\/\S+)/.exec(out)
      if (m) resolve(m[1])
    })
    child.once('exit', (code) => reject(new Error(`hangar serve exited ${code}: ${out}`)))
  })
  // Keep draining stdout ("stopped" and any info lines) so the pipe never blocks the server.
  child.stdout!.resume()
  const adminKey = readFileSync(join(dataDir, 'data', 'admin-key'), 'utf8').trim()
  const api = async (method: string, path: string, body?: unknown, key = adminKey) => {
    const res = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    })
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : undefined }
  }
  return {
    url,
    adminKey,
    child,
    dataDir,
    dbFile: join(dataDir, 'data', 'hangar.db'),
    api,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r))
        child.kill('SIGTERM')
        // A server that does not stop in time is killed: the bench must leave no process behind.
        const timer = setTimeout(() => child.kill('SIGKILL'), 30_000)
        await exited
        clearTimeout(timer)
      }
      if (!opts.dataDir) rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/** Creates an account (optionally exempt from quotas) and returns one ALL key of it. */
export async function accountKey(s: BenchServer, name: string, rateLimitExempt = false): Promise<string> {
  await s.api('POST', '/v2/admin/accounts', { name, rateLimitExempt })
  return (await s.api('POST', '/v2/admin/keys', { account: name, permission: 'ALL' })).body.key
}

/** Runs autocannon and returns req/s and latency percentiles (ms). */
export async function load(opts: {
  url: string
  method?: 'GET' | 'POST'
  headers?: Record<string, string>
  body?: string
  connections: number
  seconds: number
}) {
  const result = await autocannon({
    url: opts.url,
    method: opts.method ?? 'GET',
    headers: opts.headers,
    body: opts.body,
    connections: opts.connections,
    duration: opts.seconds,
  })
  const non2xx = result.non2xx + result.errors
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx,
    total: result.requests.total,
  }
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
}

export function machine(): string {
  const c = cpus()
  return `${c.length} x ${c[0]?.model.trim() ?? 'cpu'}, ${Math.round(totalmem() / 1024 ** 3)} GiB, Node ${process.version}`
}

export function commit(): string {
  try {
    return execSync('git rev-parse --short HEAD', { cwd: ROOT }).toString().trim()
  } catch {
    return 'unknown'
  }
}

/** Resident set size of a process, in MiB (Linux /proc). */
export function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m ? Math.round(Number(m[1]) / 1024) : NaN
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/** Polls `check` every `everyMs` until it returns true; throws after `timeoutMs`. */
export async function until(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs: number,
  everyMs = 100,
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(everyMs)
  }
}

/** A small CPU queue endpoint; `overrides` replace top-level fields of the create body. */
export async function createQueueEndpoint(
  s: BenchServer,
  key: string,
  image: string,
  overrides: Record<string, unknown> = {},
): Promise<string> {
  const body = {
    name: `bench-${image.replace(/\W+/g, '-')}`,
    type: 'QUEUE',
    image,
    cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
    scaling: { type: 'QUEUE_DELAY', queueDelay: 1 },
    workers: { min: 0, max: 1, idleTimeout: 60 },
    ...overrides,
  }
  const r = await s.api('POST', '/v2/serverless', body, key)
  if (r.status !== 201) throw new Error(`create endpoint: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body.id
}

/** Waits until `count` workers of an endpoint have called in (ready). */
export async function waitReady(
  s: BenchServer,
  key: string,
  endpointId: string,
  count: number,
  timeoutMs = 30_000,
): Promise<void> {
  await until(
    `${count} ready workers`,
    async () => (await s.api('GET', `/v2/${endpointId}/health`, undefined, key)).body?.workers?.ready >= count,
    timeoutMs,
    50,
  )
}

/** Config every job workload starts from: quiet logs, no GPU probing, limits that do not cut the load. */
export function jobServerConfig(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    logLevel: 'warn',
    fleet: { detectGpus: false },
    // The job-operation limits rise with running workers; this allowance keeps them out of the way.
    rateLimits: { perWorker: { rate: 1_000_000_000, concurrent: 1_000_000 } },
    images: benchImages(),
    ...extra,
  }
}

/** Images of the bench workers (bench/workers/*.mjs), mapped to local commands. */
export function benchImages(): Record<string, { command: string[]; env?: Record<string, string> }> {
  const worker = (name: string) => [process.execPath, join(SERVER_ROOT, 'bench', 'workers', `${name}.mjs`)]
  return {
    'bench/noop:latest': { command: worker('noop') },
    'bench/idle:latest': { command: worker('idle') },
    'bench/echo:latest': { command: worker('echo'), env: { HANGAR_BENCH_CONCURRENCY: '8' } },
    'bench/noop8:latest': { command: worker('noop'), env: { HANGAR_BENCH_CONCURRENCY: '8' } },
  }
}

export function round(n: number, digits = 0): number {
  const f = 10 ** digits
  return Math.round(n * f) / f
}

/**
 * Submits `count` jobs to an endpoint's /run over a keep-alive undici Pool of `connections`, keeping
 * `inFlight` requests outstanding. Returns the elapsed ms and the number refused (non-200).
 */
export async function submitJobs(
  s: BenchServer,
  key: string,
  endpointId: string,
  count: number,
  opts: {
    connections: number
    inFlight: number
    body?: (i: number) => unknown
    keepIdEvery?: number
    deadline?: number
  },
): Promise<{ ms: number; submitted: number; failed: number; firstError?: string; ids: string[] }> {
  const pool = new Pool(s.url, { connections: opts.connections, keepAliveTimeout: 60_000 })
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
  const path = `/v2/${endpointId}/run`
  const body = opts.body ?? ((i: number) => ({ input: { i } }))
  let next = 0
  let failed = 0
  let submitted = 0
  let firstError: string | undefined
  const ids: string[] = []
  const t0 = performance.now()
  const lane = async () => {
    while (next < count && (opts.deadline === undefined || Date.now() < opts.deadline)) {
      const i = next++
      const res = await pool.request({ path, method: 'POST', headers, body: JSON.stringify(body(i)) })
      const text = await res.body.text()
      if (res.statusCode !== 200) {
        failed++
        firstError ??= `${res.statusCode} ${text.slice(0, 300)}`
      } else {
        submitted++
        if (opts.keepIdEvery && i % opts.keepIdEvery === 0) ids.push((JSON.parse(text) as { id: string }).id)
      }
    }
  }
  try {
    await Promise.all(Array.from({ length: Math.min(opts.inFlight, count) }, lane))
  } finally {
    await pool.close()
  }
  return { ms: performance.now() - t0, submitted, failed, firstError, ids }
}

/** CPU time (user + system) a process has used so far, in ms (Linux /proc, 100 ticks a second). */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    // Fields 14 and 15 of stat (utime, stime) are the 12th and 13th after the command name.
    return (Number(f[11]) + Number(f[12])) * 10
  } catch {
    return 0
  }
}

/** Direct children of a process (Linux /proc). */
function directChildren(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    return []
  }
}

/**
 * Every process below `pid` (Linux /proc): a sandboxed worker is the grandchild of the control plane or further
 * down (supervisor, bwrap, program), so its CPU is only counted when all of them are.
 */
export function childPids(pid: number): number[] {
  const all: number[] = []
  for (let next = directChildren(pid); next.length > 0; next = next.flatMap(directChildren)) all.push(...next)
  return all
}

/**
 * CPU used by the control plane, its worker processes and this (client) process between start() and
 * the returned function's call, in µs per job. CPU time, unlike wall time, is barely moved by other
 * programs competing for the cores.
 */
export function cpuMeter(
  serverPid: number,
  workerPids: number[],
): (jobs: number) => { server: number; workers: number; client: number } {
  const s0 = cpuMs(serverPid)
  const w0 = workerPids.reduce((a, p) => a + cpuMs(p), 0)
  const c0 = process.cpuUsage()
  return (jobs) => {
    const c = process.cpuUsage(c0)
    return {
      server: ((cpuMs(serverPid) - s0) * 1000) / jobs,
      workers: ((workerPids.reduce((a, p) => a + cpuMs(p), 0) - w0) * 1000) / jobs,
      client: (c.user + c.system) / jobs,
    }
  }
}

/**
 * A bare Fastify process (no auth, store, schemas or hooks) serving the routes in `routes` (code using `f`,
 * the Fastify instance): the HTTP stack's own cost on this machine, the floor beside a Hangar figure.
 */
export async function startBareFastify(routes: string): Promise<{ url: string; pid: number; stop: () => void }> {
  const code = `const f = require('fastify')(); ${routes}; f.listen({ port: 0, host: '127.0.0.1' }).then(() => console.log(f.server.address().port))`
  const child = spawn(process.execPath, ['-e', code], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] })
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout!.once('data', (b: Buffer) => resolve(String(b).trim()))
    child.once('exit', (c) => reject(new Error(`bare Fastify exited (${c})`)))
  })
  return { url: `http://127.0.0.1:${port}`, pid: child.pid!, stop: () => child.kill() }
}
