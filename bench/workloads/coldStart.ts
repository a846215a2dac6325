import Database from 'better-sqlite3'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import {
  accountKey,
  createQueueEndpoint,
  jobServerConfig,
  round,
  SERVER_ROOT,
  startServer,
  until,
  type BenchContext,
  type BenchServer,
  type Row,
} from '../lib.js'

/** One cold start: client round trip and its parts, from the job's and the worker's stored times. */
interface ColdStart {
  total: number
  /** Submission to the worker's process being spawned (the scaler's decision, placement, spawn). */
  spawn: number
  /** Spawned to the job taken: the process boots, the SDK starts and its first job-take gets the job. */
  ready: number
  /** Taken to COMPLETED and the /runsync answered. */
  rest: number
}

/**
 * Workload 4: cold start. A new endpoint with workers.min 0 (no worker) running the shipped echo worker
 * (hangar/echo, TypeScript SDK); its first /runsync is timed and split using the job's createdAt /
 * startedAt and the worker record's startedAt (set once the process is spawned). Median of several.
 */
export async function coldStart(ctx: BenchContext): Promise<Row[]> {
  const runs = ctx.quick ? 2 : 7
  const s = await startServer(jobServerConfig())
  const w = '4 cold start'
  try {
    const key = await accountKey(s, 'bench', true)
    const all: ColdStart[] = []
    for (let i = 0; i < runs; i++) all.push(await oneColdStart(s, key, i))
    const med = (k: keyof ColdStart) => round(median(all.map((c) => c[k])))
    const total = med('total')
    const floor = await nodeBootFloor(runs)
    return [
      {
        workload: w,
        metric: 'first /runsync to COMPLETED',
        value: total,
        unit: 'ms',
        goal: '<= 250 ms',
        met: total <= 250,
        note: `median of ${runs}, hangar/echo:latest (node + TypeScript SDK); all: ${all.map((c) => round(c.total)).join(', ')} ms`,
      },
      {
        workload: w,
        metric: 'submit -> process spawned',
        value: med('spawn'),
        unit: 'ms',
        note: 'scaling decision, placement, spawn',
      },
      {
        workload: w,
        metric: 'spawned -> job taken',
        value: med('ready'),
        unit: 'ms',
        note: 'process boot, SDK start, first job-take',
      },
      {
        workload: w,
        metric: 'taken -> answered',
        value: med('rest'),
        unit: 'ms',
        note: 'handler, job-done, /runsync wake-up',
      },
      {
        workload: w,
        metric: 'floor: node runs a first line',
        value: floor.bare,
        unit: 'ms',
        note: `median of ${runs}: from the process's start to its first line (performance.now() in a child spawned by the benchmark); node's own start-up, 80-130 ms on this machine from run to run`,
      },
      {
        workload: w,
        metric: 'floor: node has loaded the worker SDK',
        value: floor.sdk,
        unit: 'ms',
        note: 'the same, once `import` of the SDK resolved: the part of "spawned -> job taken" before the first job-take is sent',
      },
    ]
  } finally {
    await s.stop()
  }
}

async function oneColdStart(s: BenchServer, key: string, i: number): Promise<ColdStart> {
  const ep = await createQueueEndpoint(s, key, 'hangar/echo:latest', {
    name: `cold-${i}`,
    workers: { min: 0, max: 1, idleTimeout: 60 },
  })
  const t0 = performance.now()
  const r = await s.api('POST', `/v2/${ep}/runsync`, { input: { i } }, key)
  const total = performance.now() - t0
  if (r.status !== 200 || r.body.status !== 'COMPLETED')
    throw new Error(`cold /runsync: ${r.status} ${JSON.stringify(r.body)}`)
  const db = new Database(s.dbFile, { readonly: true, fileMustExist: true })
  try {
    const job = db.prepare('SELECT created_at, started_at FROM jobs WHERE id = ?').get(r.body.id) as {
      created_at: number
      started_at: number
    }
    const worker = db
      .prepare('SELECT started_at FROM workers WHERE endpoint_id = ? ORDER BY created_at LIMIT 1')
      .get(ep) as { started_at: number }
    const spawn = worker.started_at - job.created_at
    const ready = job.started_at - worker.started_at
    // The next cold start must not wait for capacity this worker holds: remove the endpoint, wait for its worker to go.
    const del = await s.api('DELETE', `/v2/serverless/${ep}`, undefined, key)
    if (del.status >= 300) throw new Error(`delete endpoint: ${del.status} ${JSON.stringify(del.body)}`)
    const active = db.prepare(
      `SELECT count(*) AS n FROM workers WHERE endpoint_id = ? AND state NOT IN ('EXITED', 'FAILED')`,
    )
    await until('the worker of a deleted endpoint to stop', () => (active.get(ep) as { n: number }).n === 0, 30_000, 50)
    return { total, spawn, ready, rest: total - spawn - ready }
  } finally {
    db.close()
  }
}

/**
 * What starting node costs here, read inside the child (performance.now() counts from the process's start):
 * when the first line of a script runs, and when the worker SDK has loaded. The bound under a process cold
 * start's "spawned -> job taken".
 */
async function nodeBootFloor(runs: number): Promise<{ bare: number; sdk: number }> {
  const sdk = pathToFileURL(join(SERVER_ROOT, 'dist/worker/index.js')).href
  const code = `const a = performance.now(); await import(${JSON.stringify(sdk)}); console.log(JSON.stringify([a, performance.now()]))`
  const bare: number[] = []
  const loaded: number[] = []
  for (let i = 0; i < runs; i++) {
    const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout!.on('data', (b: Buffer) => (out += String(b)))
    await new Promise<void>((resolve, reject) =>
      child.once('exit', (c) => (c === 0 ? resolve() : reject(new Error(`node exited ${c}`)))),
    )
    const [a, b] = JSON.parse(out) as [number, number]
    bare.push(a)
    loaded.push(b)
  }
  return { bare: round(median(bare)), sdk: round(median(loaded)) }
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
