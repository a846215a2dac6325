import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { WebSocket } from 'ws'
import { dropSchema, freshSchemaName, pgAvailableOrSkip, PG_TEST_URL } from './helpers/postgres.js'
import { processEnvironments } from './helpers/process.js'
import { leads, startReplica, type Replica } from './helpers/replicas.js'
import { until } from './helpers/until.js'

const available = await pgAvailableOrSkip('the replica forwarding test')
const LB_DOMAIN = 'lb.test'

/**
 * The workloads (their supervisors: the leaders of their process groups) whose program has `entry` in its
 * environment; the supervisor itself runs with Hangar's fixed environment (issue 34).
 */
function pidsWithEnv(entry: string): number[] {
  const [name, value] = [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]
  return [
    ...new Set(
      processEnvironments()
        .filter((p) => p.env.get(name) === value)
        .map((p) => p.pgrp),
    ),
  ]
}

/** Processes running in the data dir (workers, pod programs), for the cleanup. */
function programsIn(dataDir: string): number[] {
  return readdirSync('/proc')
    .filter(
      (d) =>
        /^\d+$/.test(d) &&
        (() => {
          try {
            return readlinkSync(`/proc/${d}/cwd`).startsWith(dataDir)
          } catch {
            return false
          }
        })(),
    )
    .map(Number)
}

/** The parent of a process. */
function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
}

/** A GET with a chosen Host header (fetch may not set one): host-based load-balancer addressing. */
function getWithHost(base: string, path: string, host: string, key: string): Promise<{ status: number; body: string }> {
  const u = new URL(base)
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: u.hostname, port: u.port, path, headers: { host, authorization: `Bearer ${key}` } },
      (res) => {
        let body = ''
        res.on('data', (c) => (body += c))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
      },
    )
    req.on('error', reject)
    req.end()
  })
}

describe.skipIf(!available)('requests that need the leader, sent to a follower', () => {
  const schema = freshSchemaName('hangar_fwd')
  const dataDir = mkdtempSync(join(tmpdir(), 'hangar-fwd-'))
  const replicas: Replica[] = []
  let leader: Replica
  let follower: Replica
  let key = ''
  /** The load-balancing endpoint of the first test. */
  let ep = ''
  const call = async (
    r: Replica,
    path: string,
    method = 'GET',
    body?: unknown,
    headers: Record<string, string> = {},
  ) => {
    const res = await fetch(r.url + path, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return { status: res.status, headers: res.headers, body: (await res.json().catch(() => null)) as any }
  }

  beforeAll(async () => {
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
        loadBalancer: { domain: LB_DOMAIN },
      }),
    )
    // One after the other: the first creates the schema and the admin key, and leads.
    leader = await startReplica('a', dataDir, configFile)
    replicas.push(leader)
    follower = await startReplica('b', dataDir, configFile)
    replicas.push(follower)
    key = readFileSync(join(dataDir, 'admin-key'), 'utf8').trim()
    expect(leads(leader)).toBe(true)
    expect(leads(follower)).toBe(false)
    // The follower learns the leader's address at its next try of the lock (every second).
    await until(
      async () => (await call(follower, '/v2/pods')).status === 200,
      10_000,
      'the follower forwarding to the leader',
    )
  }, 60_000)

  afterAll(async () => {
    if (process.env.HANGAR_TEST_KEEP_LOGS) for (const r of replicas) writeFileSync(`/tmp/fwd-${r.name}.log`, r.out())
    for (const r of replicas) if (r.proc.exitCode === null && r.proc.signalCode === null) r.proc.kill('SIGKILL')
    for (const pid of programsIn(dataDir)) process.kill(pid, 'SIGKILL')
    await dropSchema(schema).catch(() => undefined)
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('reaches a load-balancing worker through the follower: by path, by host, and over a WebSocket', async () => {
    const created = await call(follower, '/v2/serverless', 'POST', {
      name: 'fwd-lb',
      type: 'LOAD_BALANCER',
      image: 'hangar/http:latest',
      cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
      scaling: { type: 'REQUEST_COUNT', requestCount: 4 },
      workers: { min: 0, max: 1, idleTimeout: 60 },
      env: { HTTP_INIT_MS: '200' },
    })
    expect(created.status).toBe(201)
    ep = created.body.id as string

    // A cold start: the request waits on the leader while its scaler starts a worker.
    const echoed = await fetch(`${follower.url}/lb/${ep}/echo`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'text/plain' },
      body: 'through the follower',
    })
    expect(echoed.status).toBe(200)
    expect(await echoed.text()).toBe('through the follower')
    const workerId = echoed.headers.get('x-worker-id')
    expect(workerId).toBeTruthy()

    // The worker sees the client first in X-Forwarded-For, and not the hop header.
    const seen = await call(follower, `/lb/${ep}/headers`)
    expect(seen.status).toBe(200)
    expect(seen.body['x-forwarded-for']).toMatch(/^127\.0\.0\.1, 127\.0\.0\.1$/)
    expect(seen.body['x-hangar-forwarded-by']).toBeUndefined()
    expect(seen.body.authorization).toBeUndefined()

    const byHost = await getWithHost(follower.url, '/whoami', `${ep}.${LB_DOMAIN}`, key)
    expect(byHost.status).toBe(200)
    expect(JSON.parse(byHost.body)).toEqual({ worker: workerId })

    const ws = new WebSocket(`${follower.url.replace('http', 'ws')}/lb/${ep}/ws`, {
      headers: { authorization: `Bearer ${key}` },
    })
    const reply = await new Promise<string>((resolve, reject) => {
      ws.once('open', () => ws.send('hello over two hops'))
      ws.once('message', (data) => resolve(String(data)))
      ws.once('error', reject)
    })
    expect(reply).toBe('hello over two hops')
    ws.close()

    // The leader still authenticates what the follower hands on.
    expect((await fetch(`${follower.url}/lb/${ep}/whoami`)).status).toBe(401)
    const refused = new WebSocket(`${follower.url.replace('http', 'ws')}/lb/${ep}/ws`)
    const status = await new Promise<number>((resolve) =>
      refused.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0)),
    )
    expect(status).toBe(401)
  }, 60_000)

  it('creates, stops, starts and terminates a pod through the follower, its program run once, by the leader', async () => {
    const created = await call(follower, '/v2/pods', 'POST', {
      name: 'fwd-pod',
      image: 'hangar/pod:latest',
      cpu: { id: 'cpu3c', vcpuCount: 2 },
      ports: ['8080/http'],
    })
    expect(created.status).toBe(201)
    const id = created.body.id as string
    const programs = () => pidsWithEnv(`RUNPOD_POD_ID=${id}`)
    const running = async () => {
      await until(
        async () => (await call(follower, `/v2/pods/${id}`)).body?.status === 'RUNNING',
        20_000,
        'pod RUNNING',
      )
      await until(async () => programs().length === 1, 10_000, 'one program')
      // The leader's PodService started it: the workload is the leader's child.
      expect(parentOf(programs()[0])).toBe(leader.proc.pid)
    }
    await running()
    const first = await until(
      async () =>
        (await call(follower, `/proxy/${id}/8080/`)).body?.podId
          ? (await call(follower, `/proxy/${id}/8080/`)).body
          : undefined,
      10_000,
      'pod port through the proxy',
    )
    expect(first).toMatchObject({ podId: id, port: 8080 })
    const firstPid = programs()[0]

    const stopped = await call(follower, `/v2/pods/${id}/action`, 'POST', { action: 'stop' })
    expect(stopped.status).toBe(200)
    expect(stopped.body.status).toBe('EXITED')
    expect(programs()).toEqual([])

    expect((await call(follower, `/v2/pods/${id}/action`, 'POST', { action: 'start' })).status).toBe(200)
    await running()
    const second = await until(
      async () =>
        (await call(follower, `/proxy/${id}/8080/`)).body?.podId
          ? (await call(follower, `/proxy/${id}/8080/`)).body
          : undefined,
      10_000,
      'pod port after the start',
    )
    expect(second).toMatchObject({ podId: id, port: 8080 })
    expect(programs()).not.toContain(firstPid)

    // Its log streams live from the leader: the request above is in it.
    const logs = await fetch(`${follower.url}/v2/pods/${id}/logs?tail=50`, {
      headers: { authorization: `Bearer ${key}` },
    })
    expect(logs.headers.get('content-type')).toBe('text/event-stream')
    const reader = logs.body!.getReader()
    let text = ''
    while (!text.includes('GET / on port 8080')) text += Buffer.from((await reader.read()).value ?? []).toString()
    await reader.cancel()

    const gone = await call(follower, `/v2/pods/${id}`, 'DELETE')
    expect(gone.status).toBe(204)
    expect(programs()).toEqual([])
    expect((await call(leader, `/v2/pods/${id}`)).status).toBe(404)
  }, 60_000)

  it('refuses a request already forwarded once, rather than sending it on', async () => {
    const r = await call(follower, '/v2/pods', 'GET', undefined, { 'x-hangar-forwarded-by': 'http://127.0.0.1:1' })
    expect(r.status).toBe(503)
    expect(r.headers.get('retry-after')).toBe('1')
    expect(r.body.detail).toContain('leadership is moving')
  })

  it('serves load-balancer traffic through the survivor once it has taken over from a killed leader', async () => {
    leader.proc.kill('SIGKILL')
    // Until the survivor leads, it answers 503 with Retry-After (the dead leader's address is not followed);
    // then it serves the worker itself (adopted, or started again).
    const statuses = new Set<number>()
    const res = await until(
      async () => {
        const r = await fetch(`${follower.url}/lb/${ep}/whoami`, { headers: { authorization: `Bearer ${key}` } })
        statuses.add(r.status)
        if (r.status === 503) expect(r.headers.get('retry-after')).toBe('1')
        return r.status === 200 ? r : undefined
      },
      30_000,
      'load-balancer traffic after the takeover',
    )
    expect(leads(follower)).toBe(true)
    expect(await res.json()).toMatchObject({ worker: expect.any(String) })
    expect([...statuses].filter((s) => s !== 200 && s !== 503)).toEqual([])
  }, 45_000)
})
