import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { dropSchema, freshSchemaName, pgAvailableOrSkip, PG_TEST_URL } from './helpers/postgres.js'
import { leads, startReplica, type Replica } from './helpers/replicas.js'
import { pidOf } from './helpers/runtime.js'
import { until } from './helpers/until.js'

const REDIS_URL = process.env.HANGAR_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
const available = await pgAvailableOrSkip('the replica test')

/**
 * The load balancer in front of the replicas, as workers reach the control plane: round robin over those
 * still up (a refused connection tries the next). Counts worker-protocol calls per replica.
 */
function balancer(targets: () => Replica[]) {
  const served = new Map<string, number>()
  let next = 0
  const server = http.createServer((req, res) => {
    const body: Buffer[] = []
    req.on('data', (c) => body.push(c))
    req.on('end', () => {
      const tryAt = (attempt: number) => {
        const live = targets().filter((t) => t.proc.exitCode === null && t.proc.signalCode === null)
        if (live.length === 0 || attempt > live.length) return void res.writeHead(502).end()
        const t = live[next++ % live.length]
        const u = new URL(t.url)
        const up = http.request({ host: u.hostname, port: u.port, method: req.method, path: req.url, headers: req.headers }, (r) => {
          if (/job-take|job-done|ping/.test(req.url ?? '')) served.set(t.name, (served.get(t.name) ?? 0) + 1)
          res.writeHead(r.statusCode ?? 502, r.headers)
          r.pipe(res)
        })
        up.on('error', () => (res.headersSent ? res.destroy() : tryAt(attempt + 1)))
        up.end(Buffer.concat(body))
      }
      tryAt(0)
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

const listen = (s: http.Server) => new Promise<number>((resolve) => s.listen(0, '127.0.0.1', () => resolve((s.address() as AddressInfo).port)))

describe.skipIf(!available)('two control-plane replicas on one PostgreSQL', () => {
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

  it('completes every accepted job exactly once through a leader SIGKILL, hands the workers to the new leader, and leaves none orphaned', async () => {
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
        jobs: { pingIntervalMs: 500, takeWaitMs: 2000 },
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
      const res = await fetch(r.url + path, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
      return { status: res.status, body: (await res.json().catch(() => null)) as any }
    }
    const created = await call(b, '/v2/serverless', 'POST', {
      name: 'replicas',
      type: 'QUEUE',
      image: 'hangar/sleep:latest',
      cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
      scaling: { type: 'QUEUE_DELAY', queueDelay: 1 },
      workers: { min: 0, max: 3, idleTimeout: 60 },
    })
    expect(created.status).toBe(201)
    const ep = created.body.id as string

    // Jobs go to both replicas, and keep arriving at the survivor after the kill.
    const accepted: string[] = []
    const submit = (r: Replica, i: number) =>
      call(r, `/v2/${ep}/run`, 'POST', { input: { ms: 150, i }, webhook: `http://127.0.0.1:${rxPort}/hook` }).then(
        (res) => void (res.status === 200 && accepted.push(res.body.id)),
        () => undefined,
      )
    const first = Array.from({ length: 60 }, (_, i) => submit(i % 2 ? a : b, i))
    // A job submitted on a follower wakes the leader's scaler and a worker long-polling anywhere.
    await until(async () => (await db.query(`SELECT count(*)::int AS n FROM "${schema}".jobs WHERE status = 'COMPLETED'`)).rows[0].n >= 10, 30_000, 'first completions')
    expect(lb.served.get('a') ?? 0).toBeGreaterThan(0)
    expect(lb.served.get('b') ?? 0).toBeGreaterThan(0)

    // The leader dies under load, its workers running.
    const before = workerPids(dataDir)
    expect(before.length).toBeGreaterThan(0)
    a.proc.kill('SIGKILL')
    const killedAt = Date.now()
    await Promise.all(first)
    const later = Array.from({ length: 20 }, (_, i) => submit(b, 100 + i))
    await until(async () => leads(b), 10_000, 'a new leader')
    expect(Date.now() - killedAt).toBeLessThan(5_000)
    await Promise.all(later)
    expect(accepted.length).toBeGreaterThanOrEqual(70)

    // Every accepted job ends COMPLETED, and its completion happened once (one webhook delivery id).
    const ids = [...new Set(accepted)]
    await until(
      async () => {
        const r = await db.query(`SELECT count(*)::int AS n FROM "${schema}".jobs WHERE id = ANY($1) AND status = 'COMPLETED'`, [ids])
        return r.rows[0].n === ids.length
      },
      60_000,
      'every accepted job completed',
    )
    const other = await db.query(`SELECT id, status FROM "${schema}".jobs WHERE id = ANY($1) AND status <> 'COMPLETED'`, [ids])
    expect(other.rows).toEqual([])
    await until(async () => ids.every((id) => rx.deliveries.has(id)), 30_000, 'every webhook delivered')
    expect(ids.filter((id) => rx.deliveries.get(id)!.size !== 1)).toEqual([])

    // No orphan: every worker process still running is one the new leader knows and reports.
    await until(
      async () => {
        const running = workerPids(dataDir)
        const listed = await call(b, `/v2/serverless/${ep}/workers`)
        const active = await db.query(`SELECT runtime_ref FROM "${schema}".workers WHERE state IN ('STARTING', 'READY')`)
        const known = new Set(active.rows.map((r: { runtime_ref: string }) => pidOf(r.runtime_ref)))
        return running.every((pid) => known.has(pid)) && listed.status === 200 && running.length <= 3
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
  }, 150_000)
})
