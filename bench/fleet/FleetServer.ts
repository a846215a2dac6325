import { type ChildProcess, fork } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Pool } from 'undici'
import { VirtualWorkers, type VirtualWorkerOptions } from './VirtualWorkers.js'

/** What the control plane process reports of itself since the last reset. */
export interface ControlPlaneStats {
  seconds: number
  /** CPU time over wall time: 1 = one core busy. */
  cores: number
  rssMb: number
  lagP99Ms: number
  lagMaxMs: number
  statementsPerS: number
  passes: number
  passP50Ms: number
  passP99Ms: number
  passMaxMs: number
  /** Starts begun since the last reset. */
  startsBegun: number
  workloads: number
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

/**
 * Whether dist/ was built from the src/ there is now (no file of src/ is newer than dist/main.js): then the
 * control plane runs the built code, which starts in about half the time of compiling src/ under tsx.
 */
export function distIsFresh(): boolean {
  const built = join(ROOT, 'dist/main.js')
  if (!existsSync(built)) return false
  const at = statSync(built).mtimeMs
  const src = join(ROOT, 'src')
  for (const f of readdirSync(src, { recursive: true, encoding: 'utf8' })) {
    if (statSync(join(src, f)).mtimeMs > at) return false
  }
  return true
}

/**
 * A Hangar on a simulated fleet: the control plane in a child process (bench/fleet/serve.ts), its workers
 * virtual, in this process. `hosts` virtual hosts of 8 virtual RTX 4090s each.
 */
export class FleetServer {
  private constructor(
    readonly child: ChildProcess,
    readonly url: string,
    readonly adminKey: string,
    readonly workers: VirtualWorkers,
    private readonly dataDir: string,
    private readonly pool: Pool,
    private readonly ownWorkers: boolean,
  ) {}

  static async start(opts: {
    hosts: number
    /** The virtual workers' options, or virtual workers that replicas on one database share (not closed here). */
    workers: VirtualWorkerOptions | VirtualWorkers
    /** Extra configuration (merged over the fleet's). */
    config?: Record<string, unknown>
    /** Node flags of the control plane (--cpu-prof). */
    nodeArgs?: string[]
    /**
     * Hangar's own Kubernetes runtime (`config.runtime.kubernetes`) instead of the simulated one: the fleet is
     * the cluster's Nodes (`hosts` is ignored), and its workers start from Pods on virtual Nodes.
     */
    kubernetes?: boolean
  }): Promise<FleetServer> {
    const dataDir = mkdtempSync(join(tmpdir(), 'hangar-fleet-'))
    const config = {
      host: '127.0.0.1',
      port: 0,
      dataDir: join(dataDir, 'data'),
      logLevel: 'warn',
      fleet: {
        detectGpus: false,
        hosts: opts.kubernetes
          ? undefined
          : Array.from({ length: opts.hosts }, (_, i) => ({
              id: `node-${i}`,
              dataCenterId: 'LOCAL-1',
              vcpus: 128,
              memoryGb: 1024,
              gpus: [{ typeId: 'NVIDIA GeForce RTX 4090', count: 8, cudaVersion: '12.4', virtual: true }],
            })),
      },
      rateLimits: { perWorker: { rate: 1_000_000_000, concurrent: 1_000_000 } },
      ...opts.config,
    }
    const child = fork(fileURLToPath(new URL('./serve.ts', import.meta.url)), [], {
      execArgv: ['--import', 'tsx', ...(opts.nodeArgs ?? [])],
      env: {
        ...process.env,
        HANGAR_FLEET_CONFIG: JSON.stringify(config),
        HANGAR_LOG_LEVEL: 'warn',
        HANGAR_FLEET_DIST: distIsFresh() ? '1' : '0',
        HANGAR_FLEET_RUNTIME: opts.kubernetes ? 'kubernetes' : 'sim',
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    const workers = opts.workers instanceof VirtualWorkers ? opts.workers : new VirtualWorkers(opts.workers)
    // Workers that end while the control plane exits have no one left to tell.
    const tell = (m: object) => {
      if (child.connected) child.send(m, (err) => err && undefined)
    }
    child.on('error', (err) => console.error('fleet control plane:', err.message))
    const ready = new Promise<{ url: string; adminKey: string }>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`fleet control plane exited ${code} before it was ready`)))
      child.on(
        'message',
        (m: { t: string; id: string; env: Record<string, string>; url: string; adminKey: string }) => {
          if (m.t === 'ready') resolve(m)
          else if (m.t === 'start') workers.start(m.id, m.env, () => tell({ t: 'exit', id: m.id }))
          else if (m.t === 'stop') workers.end(m.id)
        },
      )
    })
    const { url, adminKey } = await ready
    // A replica after the first start has no key of its own to tell: the configured one is the admin's.
    const key = adminKey ?? ((config as Record<string, unknown>).adminApiKey as string)
    const own = workers !== opts.workers
    return new FleetServer(child, url, key, workers, dataDir, new Pool(url, { connections: 64 }), own)
  }

  async api<T = any>(
    method: string,
    path: string,
    body?: unknown,
    key = this.adminKey,
  ): Promise<{ status: number; body: T }> {
    const res = await this.pool.request({
      path,
      method: method as 'GET',
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    })
    const text = await res.body.text()
    return { status: res.statusCode, body: text ? JSON.parse(text) : undefined }
  }

  /** Resets the control plane's counters (a measured window starts). */
  resetStats(): void {
    this.child.send({ t: 'resetStats' })
  }

  stats(): Promise<ControlPlaneStats> {
    return new Promise((resolve) => {
      const on = (m: { t: string } & ControlPlaneStats) => {
        if (m.t !== 'stats') return
        this.child.off('message', on)
        resolve(m)
      }
      this.child.on('message', on)
      this.child.send({ t: 'stats' })
    })
  }

  /** Kubernetes: one read of the cluster's capacity in the control plane's process (wall ms, CPU ms). */
  refreshCost(): Promise<{ ms: number; cpuMs: number }> {
    return new Promise((resolve) => {
      const on = (m: { t: string; ms: number; cpuMs: number }) => {
        if (m.t !== 'refreshCost') return
        this.child.off('message', on)
        resolve(m)
      }
      this.child.on('message', on)
      this.child.send({ t: 'refreshCost' })
    })
  }

  private stopped = false

  /** Stops the control plane (once; a second call does nothing). */
  async stop(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((r) => this.child.once('exit', r))
      this.child.send({ t: 'stop' })
      // A control plane that does not stop in time is killed: the bench must leave no process behind.
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 60_000)
      await exited
      clearTimeout(timer)
    }
    await this.pool.close()
    if (this.ownWorkers) await this.workers.close()
    rmSync(this.dataDir, { recursive: true, force: true })
  }
}
