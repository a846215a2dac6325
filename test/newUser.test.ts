import { Writable } from 'node:stream'
import pino from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createEndpoint, endpointBody, jobCall, waitFinal } from './helpers/endpoints.js'
import { startTestServer, type TestServer } from './helpers/server.js'

/** What tripped up a new user (issue 19), each checked against a real server. */
describe('a new user’s first hour', { timeout: 120_000 }, () => {
  let s: TestServer
  beforeAll(async () => {
    s = await startTestServer({ jobs: { pingIntervalMs: 500 } })
  })
  afterAll(() => s.stop())

  it('the workers view counts waiting jobs from the same source as /health, with no lag', async () => {
    const echo = (
      await createEndpoint(
        s,
        endpointBody('hangar/echo:latest', { name: 'lag', workers: { min: 0, max: 1, idleTimeout: 60 } }),
      )
    ).id
    const parked = (
      await createEndpoint(s, endpointBody('hangar/echo:latest', { name: 'lag-parked', workers: { min: 0, max: 0 } }))
    ).id
    for (let i = 0; i < 3; i++) {
      expect((await jobCall(s, 'POST', `/v2/${echo}/runsync`, { input: { i } })).body.status).toBe('COMPLETED')
      const [workers, health] = await Promise.all([
        s.api('GET', `/v2/serverless/${echo}/workers`),
        jobCall(s, 'GET', `/v2/${echo}/health`),
      ])
      expect(health.body.jobs.inQueue).toBe(0)
      expect(workers.body.waiting).toEqual({ jobs: 0, lowPriorityJobs: 0, reason: null })
    }
    // Jobs queued a moment ago show at once, normal and low priority apart, adding up to /health's inQueue.
    await jobCall(s, 'POST', `/v2/${parked}/run`, { input: {} })
    await jobCall(s, 'POST', `/v2/${parked}/run`, { input: {}, policy: { lowPriority: true } })
    const [workers, health] = await Promise.all([
      s.api('GET', `/v2/serverless/${parked}/workers`),
      jobCall(s, 'GET', `/v2/${parked}/health`),
    ])
    expect(health.body.jobs.inQueue).toBe(2)
    expect(workers.body.waiting).toMatchObject({ jobs: 1, lowPriorityJobs: 1 })
  })

  it('health.jobs.retried counts requeues after a lost worker, not client retries (documented in the schema)', async () => {
    const fail = (await createEndpoint(s, endpointBody('hangar/fail:latest', { name: 'retried' }))).id
    const failed = await jobCall(s, 'POST', `/v2/${fail}/runsync`, { input: { message: 'no' } })
    expect(failed.body.status).toBe('FAILED')
    expect((await jobCall(s, 'POST', `/v2/${fail}/retry/${failed.body.id}`)).body.status).toBe('IN_QUEUE')
    await waitFinal(s, fail, failed.body.id)
    expect((await jobCall(s, 'GET', `/v2/${fail}/health`)).body.jobs).toMatchObject({ failed: 1, retried: 0 })
    const openapi = await s.api('GET', '/v2/openapi.json')
    const retried = JSON.stringify(openapi.body).match(/"retried":\{[^}]*\}/)?.[0]
    expect(retried).toMatch(/lost its worker/)
    expect(retried).toMatch(/POST \/retry is not counted/)
  })

  it('reports every schema violation at once, the power-of-two rule among them', async () => {
    const r = await s.api(
      'POST',
      '/v2/serverless',
      endpointBody('hangar/echo:latest', { name: '', cpu: [{ id: 'cpu3c', vcpuCount: 3 }] }),
    )
    expect(r.status).toBe(422)
    expect(r.body.errors).toEqual([
      'name: must NOT have fewer than 1 characters',
      'cpu[0].vcpuCount: must be a power of two, got 3',
    ])
  })

  it('answers one mistake in a webhook with one error', async () => {
    const ep = (
      await createEndpoint(s, endpointBody('hangar/echo:latest', { name: 'hooks', workers: { min: 0, max: 0 } }))
    ).id
    const notUrl = await jobCall(s, 'POST', `/v2/${ep}/run`, { input: {}, webhook: 'notaurl' })
    expect(notUrl.status).toBe(400)
    expect(notUrl.body.errors).toEqual(['webhook: must be a valid uri, got "notaurl"'])
    const ftp = await jobCall(s, 'POST', `/v2/${ep}/run`, { input: {}, webhook: 'ftp://example.com/hook' })
    expect(ftp.status).toBe(400)
    expect(ftp.body.errors).toEqual(['webhook: must be an http or https URL, got "ftp://example.com/hook"'])
  })

  it("a crashed worker's lastError carries its last output lines, where the cause is", async () => {
    const script =
      "console.log('loading handler'); console.error(\"python: can't open file 'handler.py': [Errno 2] No such file or directory\"); process.exit(2)"
    const ep = (
      await createEndpoint(
        s,
        endpointBody('acme/broken:1', { name: 'broken', entrypoint: [process.execPath, '-e', script] }),
      )
    ).id
    await jobCall(s, 'POST', `/v2/${ep}/run`, { input: {} })
    const until = Date.now() + 60_000
    let unhealthy: { lastError: string } | undefined
    while (!unhealthy && Date.now() < until) {
      unhealthy = (await s.api('GET', `/v2/serverless/${ep}/workers`)).body.workers.find(
        (w: { status: string }) => w.status === 'UNHEALTHY',
      )
      if (!unhealthy) await new Promise((r) => setTimeout(r, 100))
    }
    expect(unhealthy?.lastError).toMatch(
      /exited \(code 2\); its last output:\nloading handler\npython: can't open file 'handler\.py'/,
    )
  })
})

describe('log levels', { timeout: 120_000 }, () => {
  it('logs client requests and new scaling targets at info, the worker protocol at debug', async () => {
    const lines: Array<{ level: number; msg: string; url?: string; actions?: string[] }> = []
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l))
        done()
      },
    })
    const s = await startTestServer({ jobs: { pingIntervalMs: 500 } }, { logger: pino({ level: 'debug' }, sink) })
    try {
      const ep = (await createEndpoint(s, endpointBody('hangar/echo:latest', { name: 'logged' }))).id
      expect((await jobCall(s, 'POST', `/v2/${ep}/runsync`, { input: {} })).body.status).toBe('COMPLETED')
      expect(lines.find((l) => l.msg === `POST /v2/${ep}/runsync 200`)?.level).toBe(30)
      const takes = lines.filter((l) => l.url?.includes('/job-take/') || l.url?.includes('/job-done/'))
      expect(takes.length).toBeGreaterThan(0)
      expect(takes.every((l) => l.level === 20)).toBe(true)
      // The cold start moved the target from 0 to 1 workers: worth an info line.
      const decisions = lines.filter((l) => l.msg === 'scaling decision')
      expect(decisions[0]).toMatchObject({ level: 30, actions: ['start x1'] })
    } finally {
      await s.stop()
    }
  })
})
