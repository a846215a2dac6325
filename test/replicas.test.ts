import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { dropSchema, freshSchemaName, pgAvailableOrSkip, PG_TEST_URL } from './helpers/postgres.js'
import { pythonSdkMissing, pythonWorkerImage } from './helpers/python.js'
import { leads, startReplica, type Replica } from './helpers/replicas.js'
import { pidOf } from './helpers/runtime.js'
import { programEnvironment } from './helpers/process.js'
import { until } from './helpers/until.js'

const REDIS_URL = process.env.HANGAR_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
const available = await pgAvailableOrSkip('the replica test')
const missing = pythonSdkMissing()
if (missing)
  console.warn(
    `skipping the replica failover test, whose workers run the Python runpod SDK: ${missing} (set HANGAR_REQUIRE_PYTHON=1 to fail instead)`,
  )

/**
 * The load balancer in front of the replicas, as workers reach the control plane: round robin over those
 * still up; a refused or broken connection tries the others (as a balancer does once it marks a replica down).
 * Counts worker-protocol calls per replica.
 */
function balancer(targets: () => Replica[]) {
  const served = new Map<string, number>()
  let next = 0
  const server = http.createServer((req, res) => {
    const body: Buffer[] = []
    req.on('data', (c) => body.push(c))
    req.on('end', () => {
      const failed = new Set<Replica>()
      const tryNext = () => {
        const live = targets().filter((t) => t.proc.exitCode === null && t.proc.signalCode === null && !failed.has(t))
        if (live.length === 0) return void res.writeHead(502).end()
        const t = live[next++ % live.length]
        const u = new URL(t.url)
        const up = http.request(
          { host: u.hostname, port: u.port, method: req.method, path: req.url, headers: req.headers },
          (r) => {
            if (/job-take|job-done|ping/.test(req.url ?? '')) served.set(t.name, (served.get(t.name) ?? 0) + 1)
            res.writeHead(r.statusCode ?? 502, r.headers)
            r.pipe(res)
          },
        )
        up.on('error', () => {
          failed.add(t)
          if (res.headersSent) res.destroy()
          else tryNext()
        })
        up.end(Buffer.concat(body))
      }
      tryNext()
    })
  })
  return { server, served }
}

/** A webhook receiver: distinct deliveries (by webhook-id) per job. */
function webhookReceiver() {
  const deliveries = new Map<string, Set<string>>()
  const server = http.createServer((req, res) => {
    let text = ''
    req.on('data', (c) => (text += c))
    req.on('end', () => {
      const job = JSON.parse(text) as { id: string; status: string }
      if (job.status === 'COMPLETED') {
        const set = deliveries.get(job.id) ?? new Set()
        set.add(String(req.headers['webhook-id']))
        deliveries.set(job.id, set)
      }
      res.writeHead(200).end()
    })
  })
  return { server, deliveries }
}

/**
 * Worker processes of this installation: the leaders of the process groups whose working directory is under its
 * data dir (a worker is a group: its supervisor, which the runtime ref names, the sandbox and the program).
 */
function workerPids(dataDir: string): number[] {
  const pids: number[] = []
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    try {
      if (readlinkSync(`/proc/${d}/cwd`).startsWith(join(dataDir, 'workers'))) {
        const stat = readFileSync(`/proc/${d}/stat`, 'utf8')
        const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
        if (state !== 'Z' && Number(pgrp) === Number(d)) pids.push(Number(d))
      }
    } catch {
      // gone meanwhile, or not ours
    }
  }
  return pids
}

/**
 * What the workers' logs say of each job: how many times a handler started it (the SDK's `Started.` line),
 * and the results the SDK could not post (it drops them: `Failed to return job results`).
 */
function workerLogs(dataDir: string): { runs: Map<string, number>; refused: string[] } {
  const runs = new Map<string, number>()
  const refused: string[] = []
  for (const id of readdirSync(join(dataDir, 'workers'))) {
    let text = ''
    try {
      text = readFileSync(join(dataDir, 'workers', id, 'worker.log'), 'utf8')
    } catch {
      continue
    }
    for (const m of text.matchAll(/"requestId": "([^"]+)", "message": "Started\."/g))
      runs.set(m[1], (runs.get(m[1]) ?? 0) + 1)
    for (const line of text.split('\n')) if (line.includes('Failed to return job results')) refused.push(line)
  }
  return { runs, refused }
}

/**
 * What a worker's heartbeat is sent with, read from its program's environment (the process of its supervisor's
 * group that has the worker's variables): the ping URL's path and query, and the worker's key.
 */
function heartbeatOf(pid: number): { path: string; key: string } {
  const env = programEnvironment(pid, 'RUNPOD_WEBHOOK_PING')
  if (!env) throw new Error(`no program of worker ${pid} has the worker's variables`)
  const url = new URL(env.get('RUNPOD_WEBHOOK_PING') ?? '')
  return { path: url.pathname + url.search, key: env.get('RUNPOD_AI_API_KEY') ?? '' }
}

/** The fleet: enough workers that results are being posted while the survivor takes over. */
const WORKERS = 5

const listen = (s: http.Server) =>
  new Promise<number>((resolve) => s.listen(0, '127.0.0.1', () => resolve((s.address() as AddressInfo).port)))

/**
 * Two `hangar serve` processes on one PostgreSQL and one data dir, their workers Python programs on the
 * unmodified `runpod` SDK (what nearly every worker in the wild runs), behind a balancer. The SDK is the strict
 * client here: a result post refused (a 401 from a replica that does not know the worker yet) is dropped, not
 * retried, and the job would then wait IN_PROGRESS for the worker's pings to give it away, and run again.
 */
describe.skipIf(!available || missing !== null)('two control-plane replicas on one PostgreSQL', () => {
  const schema = freshSchemaName('hangar_replicas')
  const dataDir = mkdtempSync(join(tmpdir(), 'hangar-replicas-'))
  const replicas: Replica[] = []
  const lb = balancer(() => replicas)
  const rx = webhookReceiver()
  const db = new pg.Client({ connectionString: PG_TEST_URL })

  afterAll(async () => {
    for (const r of replicas) if (r.proc.exitCode === null) r.proc.kill('SIGKILL')
    for (const pid of workerPids(dataDir)) process.kill(pid, 'SIGKILL')
    lb.server.close()
    rx.server.close()
    await db.end().catch(() => undefined)
    await dropSchema(schema).catch(() => undefined)
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('runs every accepted job once, to completion, through a leader SIGKILL under load, hands the workers to the new leader, and leaves none orphaned', async () => {
    const lbPort = await listen(lb.server)
    const rxPort = await listen(rx.server)
    await db.connect()
    const configFile = join(dataDir, 'config.json')
    writeFileSync(
      configFile,
      JSON.stringify({
        host: '127.0.0.1',
        port: 0,
        logLevel: 'info',
        fleet: { detectGpus: false },
        databaseUrl: PG_TEST_URL,
        databaseSchema: schema,
        redisUrl: REDIS_URL,
        // Workers reach the control plane through the balancer, whichever replica answers.
        workerUrl: `http://127.0.0.1:${lbPort}`,
        // The SDK pings every whole second of RUNPOD_PING_INTERVAL (under 1000 its heartbeat process dies).
        jobs: { pingIntervalMs: 1000, takeWaitMs: 2000 },
        // An async handler, four jobs at a time per worker (job-take-batch); INFO: the lines this test reads.
        images: { 'py/concurrent:1': pythonWorkerImage('concurrent', { RUNPOD_LOG_LEVEL: 'INFO' }) },
      }),
    )
    // One after the other: the first creates the schema and the admin key.
    const a = await startReplica('a', dataDir, configFile)
    replicas.push(a)
    const b = await startReplica('b', dataDir, configFile)
    replicas.push(b)
    expect(leads(a)).toBe(true)
    expect(leads(b)).toBe(false)

    const key = readFileSync(join(dataDir, 'admin-key'), 'utf8').trim()
    const call = async (r: Replica, path: string, method = 'GET', body?: unknown) => {
      const res = await fetch(r.url + path, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      return { status: res.status, body: (await res.json().catch(() => null)) as any }
    }
    const created = await call(b, '/v2/serverless', 'POST', {
      name: 'replicas',
      type: 'QUEUE',
      image: 'py/concurrent:1',
      cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
      scaling: { type: 'QUEUE_DELAY', queueDelay: 1 },
      workers: { min: WORKERS, max: WORKERS, idleTimeout: 60 },
    })
    expect(created.status).toBe(201)
    const ep = created.body.id as string

    // The fleet is up before the load starts, so that the leader dies with every worker busy.
    await until(
      async () =>
        (await db.query(`SELECT count(*)::int AS n FROM "${schema}".workers WHERE state = 'READY'`)).rows[0].n ===
        WORKERS,
      60_000,
      'the workers ready',
    )

    // Jobs of 200 ms go to both replicas, and keep arriving at the survivor after the kill.
    const accepted: string[] = []
    const submit = (r: Replica, i: number) =>
      call(r, `/v2/${ep}/run`, 'POST', { input: { seconds: 0.2, i }, webhook: `http://127.0.0.1:${rxPort}/hook` }).then(
        (res) => void (res.status === 200 && accepted.push(res.body.id)),
        () => undefined,
      )
    const first = Array.from({ length: 200 }, (_, i) => submit(i % 2 ? a : b, i))
    // A job submitted on a follower wakes a worker long-polling anywhere.
    await until(
      async () =>
        (await db.query(`SELECT count(*)::int AS n FROM "${schema}".jobs WHERE status = 'COMPLETED'`)).rows[0].n >= 40,
      30_000,
      'first completions',
    )
    expect(lb.served.get('a') ?? 0).toBeGreaterThan(0)
    expect(lb.served.get('b') ?? 0).toBeGreaterThan(0)

    // The leader dies under load, its workers running jobs and posting results; the survivor takes over while
    // they keep doing so.
    const before = workerPids(dataDir)
    expect(before.length).toBe(WORKERS)
    // Meanwhile the workers' heartbeats go to the survivor without pause, so that some reach it while it adopts
    // the workers: it must answer those too (checked below).
    const heartbeats = before.map(heartbeatOf)
    const answered = new Map<number, number>()
    let probing = true
    const probe = Promise.all(
      heartbeats.map(async (h) => {
        while (probing) {
          const res = await fetch(b.url + h.path, { headers: { authorization: h.key } }).catch(() => null)
          await res?.arrayBuffer()
          answered.set(res?.status ?? 0, (answered.get(res?.status ?? 0) ?? 0) + 1)
        }
      }),
    )
    a.proc.kill('SIGKILL')
    const killedAt = Date.now()
    await Promise.all(first)
    // Paced, as clients keep sending: a burst would hold the survivor's event loop through its takeover.
    const later: Array<Promise<void>> = []
    const pacing = (async () => {
      for (let i = 0; i < 200; i++) {
        later.push(submit(b, 1000 + i))
        await new Promise((r) => setTimeout(r, 20))
      }
    })()
    await until(async () => leads(b), 10_000, 'a new leader')
    expect(Date.now() - killedAt).toBeLessThan(5_000)
    await until(
      async () => b.out().split('worker of the previous run adopted').length - 1 === WORKERS,
      10_000,
      'the workers adopted',
    )
    await new Promise((r) => setTimeout(r, 500))
    probing = false
    await probe
    await pacing
    await Promise.all(later)
    expect(accepted.length).toBeGreaterThanOrEqual(390)

    // Every accepted job ends COMPLETED. (So would one whose result was lost, but only once the worker's pings
    // gave it away, 30 s after its take, and it would then run again: what the checks below rule out.)
    const ids = [...new Set(accepted)]
    await until(
      async () => {
        const r = await db.query(
          `SELECT count(*)::int AS n FROM "${schema}".jobs WHERE id = ANY($1) AND status = 'COMPLETED'`,
          [ids],
        )
        return r.rows[0].n === ids.length
      },
      60_000,
      'every accepted job completed',
    )
    // Each ran once: no result was refused (and dropped by the SDK), so none had to be given away and run again.
    const logs = workerLogs(dataDir)
    expect(logs.refused).toEqual([])
    expect(ids.filter((id) => logs.runs.get(id) !== 1)).toEqual([])
    const other = await db.query(
      `SELECT id, status, retries, error FROM "${schema}".jobs WHERE id = ANY($1) AND (status <> 'COMPLETED' OR retries > 0)`,
      [ids],
    )
    expect(other.rows).toEqual([])
    // Not by chance: none of the heartbeats sent throughout the takeover was refused either.
    expect(Object.fromEntries(answered)).toEqual({ 200: expect.any(Number) })
    // Its completion happened once (one webhook delivery id).
    await until(async () => ids.every((id) => rx.deliveries.has(id)), 30_000, 'every webhook delivered')
    expect(ids.filter((id) => rx.deliveries.get(id)!.size !== 1)).toEqual([])

    // No orphan: every worker process still running is one the new leader knows and reports.
    await until(
      async () => {
        const running = workerPids(dataDir)
        const listed = await call(b, `/v2/serverless/${ep}/workers`)
        const active = await db.query(
          `SELECT runtime_ref FROM "${schema}".workers WHERE state IN ('STARTING', 'READY')`,
        )
        const known = new Set(active.rows.map((r: { runtime_ref: string }) => pidOf(r.runtime_ref)))
        return running.every((pid) => known.has(pid)) && listed.status === 200 && running.length <= WORKERS
      },
      20_000,
      'worker processes all owned by the new leader',
    )

    // The workers of the dead leader were adopted (they belong to the fleet), not replaced.
    expect(b.out()).toContain('worker of the previous run adopted')
    expect(before.filter((pid) => workerPids(dataDir).includes(pid)).length).toBeGreaterThan(0)

    // The last replica to stop stops the workers, as a single process does.
    b.proc.kill('SIGTERM')
    await new Promise((resolve) => b.proc.once('exit', resolve))
    await until(async () => workerPids(dataDir).length === 0, 10_000, 'workers stopped with the last replica')
  }, 180_000)
})
