import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { pidOf } from './helpers/runtime.js'
import { createEndpoint, endpointBody, jobCall } from './helpers/endpoints.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

describe('crash-looping and never-ready workers', () => {
  let s: TestServer
  beforeAll(async () => {
    s = await startTestServer({
      jobs: {
        pingIntervalMs: 500,
        sweepIntervalMs: 100,
        crashBackoffMs: 300,
        crashBackoffMaxMs: 10_000,
        workerStartTimeoutMs: 1_000,
      },
    })
  })
  afterAll(() => s.stop())

  const workers = async (ep: string) => (await s.api('GET', `/v2/serverless/${ep}/workers`)).body
  const command = (name: string, code: string) =>
    endpointBody('hangar/echo:latest', {
      name,
      entrypoint: [process.execPath, '-e', code],
      workers: { min: 0, max: 1, idleTimeout: 60 },
    })

  it('backs off exponentially from a worker that exits at start-up, holds no capacity meanwhile, and reports it', async () => {
    const ep = (await createEndpoint(s, command('crashy', 'process.exit(3)'))).id
    const job = (await jobCall(s, 'POST', `/v2/${ep}/run`, { input: {} })).body.id

    // While backing off, the worker is UNHEALTHY and holds nothing in the fleet.
    await until(
      async () => s.hangar.workers.snapshot(ep).some((w) => w.state === 'unhealthy'),
      10_000,
      'an unhealthy worker',
    )
    const stock = s.hangar.catalog.fleet.cpuStock(2, 2)
    expect(stock.freeVcpu).toBe(stock.totalVcpu)

    const failed = await until(
      async () => {
        const recent = (await s.hangar.store.workers.listRecent(ep, 20)).filter((w) => w.state === 'FAILED')
        return recent.length >= 4 ? recent.reverse() : undefined
      },
      20_000,
      'four failed starts',
    )
    expect(failed.every((w) => /exited \(code 3\)$/.test(w.lastError ?? ''))).toBe(true)
    // The pause between a failure and the next start doubles: 300, 600, 1200 ms.
    const pauses = failed.slice(1).map((w, i) => w.createdAt - failed[i].stoppedAt!)
    expect(pauses[0]).toBeGreaterThanOrEqual(290)
    expect(pauses[1]).toBeGreaterThanOrEqual(590)
    expect(pauses[2]).toBeGreaterThanOrEqual(1_190)

    const list = await until(
      async () => {
        const l = await workers(ep)
        return l.summary.unhealthy === 1 ? l : undefined
      },
      10_000,
      'the unhealthy worker listed',
    )
    expect(list.summary).toMatchObject({ unhealthy: 1, total: 1, running: 0, idle: 0 })
    expect(list.workers[0]).toMatchObject({
      status: 'UNHEALTHY',
      lastError: expect.stringMatching(/exited \(code 3\)$/),
      nextStartAt: expect.any(String),
      uptimeSeconds: null,
    })
    expect(list.waiting.reason).toMatchObject({
      code: 'CRASH_LOOP',
      message: expect.stringMatching(
        /^workers are crash-looping \(\d+ failure\(s\) in a row; last: worker \w+ exited \(code 3\)\)/,
      ),
    })
    expect((await jobCall(s, 'GET', `/v2/${ep}/status/${job}`)).body).toMatchObject({
      status: 'IN_QUEUE',
      waitingReason: expect.stringMatching(/^workers are crash-looping/),
    })
    expect((await jobCall(s, 'GET', `/v2/${ep}/health`)).body.workers).toMatchObject({
      unhealthy: 1,
      throttled: 0,
      running: 0,
    })

    // Fixing the endpoint (a new release) ends the loop on the next start.
    await jobCall(s, 'POST', `/v2/${ep}/cancel/${job}`)
    expect((await s.api('PATCH', `/v2/serverless/${ep}`, { entrypoint: [] })).status).toBe(200)
    const ok = await jobCall(s, 'POST', `/v2/${ep}/runsync`, { input: { fixed: true } })
    expect(ok.body).toMatchObject({ status: 'COMPLETED', output: { fixed: true } })
  }, 60_000)

  it('replaces a worker that never calls in within the start-up timeout', async () => {
    const ep = (await createEndpoint(s, command('silent', 'setInterval(() => {}, 1000)'))).id
    const job = (await jobCall(s, 'POST', `/v2/${ep}/run`, { input: {} })).body.id
    // A replacement, and the first worker's record written FAILED (the two writes may land in either order).
    const records = await until(
      async () => {
        const recent = (await s.hangar.store.workers.listRecent(ep, 10)).reverse()
        return recent.length >= 2 && recent[0].state !== 'STARTING' ? recent : undefined
      },
      15_000,
      'a replacement worker',
    )
    expect(records[0]).toMatchObject({
      state: 'FAILED',
      lastError: `worker ${records[0].id} did not call in within 1000 ms of starting: it cannot reach ${s.url}, or is not a worker (see its log)`,
    })
    expect(() => process.kill(pidOf(records[0].runtimeRef), 0)).toThrow()
    expect((await jobCall(s, 'GET', `/v2/${ep}/status/${job}`)).body.status).toBe('IN_QUEUE')
    await jobCall(s, 'POST', `/v2/${ep}/cancel/${job}`)
  }, 30_000)
})
