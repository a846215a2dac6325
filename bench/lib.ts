import autocannon from 'autocannon'
import { execSync, spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, tmpdir, totalmem } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = fileURLToPath(new URL('..', import.meta.url))

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
}

/** A `hangar serve` child process on a fresh data dir, as a user would run it. */
export interface BenchServer {
  url: string
  adminKey: string
  child: ChildProcess
  dataDir: string
  api<T = any>(method: string, path: string, body?: unknown, key?: string): Promise<{ status: number; body: T }>
  stop(): Promise<void>
}

export async function startServer(config: Record<string, unknown> = {}, env: Record<string, string> = {}): Promise<BenchServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'hangar-bench-'))
  const configFile = join(dataDir, 'config.json')
  writeFileSync(configFile, JSON.stringify(config))
  const child = spawn(process.execPath, [join(ROOT, 'bin/hangar.js'), 'serve', '--port', '0', '--data-dir', join(dataDir, 'data'), '--config', configFile], {
    env: { ...process.env, HANGAR_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let out = ''
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      out += d
      const m = /listening on (http:\/\/\S+)/.exec(out)
      if (m) resolve(m[1])
    })
    child.on('exit', (code) => reject(new Error(`hangar serve exited ${code}: ${out}`)))
  })
  const adminKey = readFileSync(join(dataDir, 'data', 'admin-key'), 'utf8').trim()
  const api = async (method: string, path: string, body?: unknown, key = adminKey) => {
    const res = await fetch(url + path, { method, headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined })
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : undefined }
  }
  return {
    url,
    adminKey,
    child,
    dataDir,
    api,
    async stop() {
      const exited = new Promise((r) => child.once('exit', r))
      child.kill('SIGTERM')
      await exited
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/** Creates an account (optionally exempt from quotas) and returns one ALL key of it. */
export async function accountKey(s: BenchServer, name: string, rateLimitExempt = false): Promise<string> {
  await s.api('POST', '/v2/admin/accounts', { name, rateLimitExempt })
  return (await s.api('POST', '/v2/admin/keys', { account: name, permission: 'ALL' })).body.key
}

/** Runs autocannon and returns req/s and latency percentiles (ms). */
export async function load(opts: { url: string; method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string; connections: number; seconds: number }) {
  const result = await autocannon({ url: opts.url, method: opts.method ?? 'GET', headers: opts.headers, body: opts.body, connections: opts.connections, duration: opts.seconds })
  const non2xx = result.non2xx + result.errors
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, non2xx, total: result.requests.total }
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
