/**
 * The control plane of a fleet run, in a process of its own so its CPU, memory and event loop are measured
 * apart from the virtual workers: a real Hangar (src/main.ts) whose runtime is a SimulatedRuntime that asks
 * the parent (bench/workloads/fleet.ts) over IPC to start and stop virtual workers. Run with `--import tsx`.
 * With HANGAR_FLEET_DIST=1 (the parent sets it when dist/ is newer than every file of src/) Hangar is loaded
 * from the built dist/ instead: tsx then compiles only this file and SimulatedRuntime's, an import of 2.5 s instead of 4.3 s (2 cores).
 *
 * With HANGAR_FLEET_RUNTIME=kubernetes Hangar keeps its own runtime (the `runtime.kubernetes` of its config):
 * its worker Pods run on virtual Nodes (bench/fleet/VirtualNodes.ts) that the parent drives, and no worker
 * is started over IPC.
 *
 * Messages from the parent: `{ t: 'exit', id }` (that worker ended: lost, or stopped), `{ t: 'stats' }`
 * (answered with `{ t: 'stats', ... }`), `{ t: 'resetStats' }`, `{ t: 'refreshCost' }` (Kubernetes: one read of
 * the cluster's capacity as the periodic refresh makes it, answered with `{ t: 'refreshCost', ms, cpuMs }`). To
 * the parent: `{ t: 'ready', url, adminKey }`, `{ t: 'start', id, env }`, `{ t: 'stop', id }`.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks'
import Database from 'better-sqlite3'
import pg from 'pg'
import { SimulatedRuntime } from './SimulatedRuntime.js'

interface FromParent {
  t: 'exit' | 'stats' | 'resetStats' | 'stop' | 'refreshCost'
  id?: string
}

const send = (m: unknown) => process.send?.(m)

// Store statements: every execution of a prepared SQLite statement (and exec) is counted.
let statements = 0
const probe = new Database(':memory:')
const proto = Object.getPrototypeOf(probe.prepare('select 1')) as Record<string, (...a: unknown[]) => unknown>
for (const m of ['run', 'get', 'all', 'iterate'] as const) {
  const orig = proto[m]
  proto[m] = function (this: unknown, ...a: unknown[]) {
    statements++
    return orig.apply(this, a)
  }
}
const dbProto = Object.getPrototypeOf(probe) as Record<string, (...a: unknown[]) => unknown>
const exec = dbProto.exec
dbProto.exec = function (this: unknown, ...a: unknown[]) {
  statements++
  return exec.apply(this, a)
}
probe.close()
// And every query sent to PostgreSQL (dist/ and src/ load the same pg module).
const client = pg.Client.prototype as unknown as Record<string, (...a: unknown[]) => unknown>
const query = client.query
client.query = function (this: unknown, ...a: unknown[]) {
  statements++
  return query.apply(this, a)
}

const exits = new Map<string, () => void>()
const runtime = new SimulatedRuntime({
  fleet: {
    start(id, env, onExit) {
      exits.set(id, onExit)
      send({ t: 'start', id, env })
    },
    end(id) {
      exits.delete(id)
      send({ t: 'stop', id })
    },
    stop(id) {
      exits.delete(id)
      send({ t: 'stop', id })
    },
  },
})

// The same module either way; dist/ is src/ as built (`npm run bench` builds first).
const from = process.env.HANGAR_FLEET_DIST === '1' ? '../../dist' : '../../src'
const { parseConfig } = (await import(`${from}/config.js`)) as typeof import('../../src/config.js')
const { startHangar } = (await import(`${from}/main.js`)) as typeof import('../../src/main.js')
const config = parseConfig(JSON.parse(process.env.HANGAR_FLEET_CONFIG ?? '{}'))
const onKubernetes = process.env.HANGAR_FLEET_RUNTIME === 'kubernetes'
const hangar = await startHangar(config, onKubernetes ? {} : { runtime: () => runtime })

/** One read of the cluster's capacity, as `capacityRefreshMs` makes it: its wall time and this process's CPU. */
async function refreshCost(): Promise<{ ms: number; cpuMs: number }> {
  const { clusterHosts } = (await import(
    `${from}/runtime/kubernetes/clusterHosts.js`
  )) as typeof import('../../src/runtime/kubernetes/clusterHosts.js')
  const { kubeConfigOf } = (await import(
    `${from}/runtime/kubernetes/kubeClient.js`
  )) as typeof import('../../src/runtime/kubernetes/kubeClient.js')
  const { CoreV1Api } = await import('@kubernetes/client-node')
  const c = config.runtime.kubernetes!
  const api = kubeConfigOf(c).makeApiClient(CoreV1Api)
  const t0 = performance.now()
  const cpu = process.cpuUsage()
  await clusterHosts(api, c, 'LOCAL-1')
  const used = process.cpuUsage(cpu)
  return { ms: performance.now() - t0, cpuMs: (used.user + used.system) / 1000 }
}

// Scaling passes: each tick's duration.
const passes: number[] = []
const tick = hangar.scaler.tick.bind(hangar.scaler)
hangar.scaler.tick = async () => {
  const t0 = performance.now()
  try {
    await tick()
  } finally {
    passes.push(performance.now() - t0)
  }
}

const lag = monitorEventLoopDelay({ resolution: 10 })
lag.enable()
let since = { at: performance.now(), cpu: process.cpuUsage(), statements: 0, starts: 0 }

process.on('message', (m: FromParent) => {
  if (m.t === 'exit' && m.id) {
    const onExit = exits.get(m.id)
    exits.delete(m.id)
    onExit?.()
  } else if (m.t === 'resetStats') {
    lag.reset()
    passes.length = 0
    since = { at: performance.now(), cpu: process.cpuUsage(), statements, starts: runtime.starts.begun }
  } else if (m.t === 'stats') {
    const ms = performance.now() - since.at
    const cpu = process.cpuUsage(since.cpu)
    const sorted = [...passes].sort((a, b) => a - b)
    const q = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN
    send({
      t: 'stats',
      seconds: ms / 1000,
      cores: (cpu.user + cpu.system) / 1000 / ms,
      rssMb: process.memoryUsage().rss / 2 ** 20,
      lagP99Ms: lag.percentile(99) / 1e6,
      lagMaxMs: lag.max / 1e6,
      statementsPerS: ((statements - since.statements) / ms) * 1000,
      passes: sorted.length,
      passP50Ms: q(50),
      passP99Ms: q(99),
      passMaxMs: sorted[sorted.length - 1] ?? Number.NaN,
      startsBegun: runtime.starts.begun - since.starts,
      workloads: runtime.size,
    })
  } else if (m.t === 'refreshCost') {
    void refreshCost().then((r) => send({ t: 'refreshCost', ...r }))
  } else if (m.t === 'stop') {
    void hangar.stop().then(
      () => process.exit(0),
      (err) => {
        console.error('fleet serve: stop failed', err)
        process.exit(1)
      },
    )
  }
})

send({ t: 'ready', url: hangar.url, adminKey: hangar.adminKey })
