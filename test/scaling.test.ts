import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from './helpers/clock.js'
import { createEndpoint, endpointBody, jobCall, waitFinal } from './helpers/endpoints.js'
import { startTestServer, type TestServer } from './helpers/server.js'

describe('simple scaling of local process workers', () => {
  let s: TestServer
  // Monotonic time (idle timeouts, heartbeats) moves only when a test moves it.
  const mono = new ManualClock()
  beforeAll(async () => {
    s = await startTestServer(
      { jobs: { pingIntervalMs: 500, requestCountIdleTimeoutMs: 300 } },
      { monotonic: () => mono.now() },
    )
  })
  afterAll(() => s.stop())

  /** Lets `ms` pass after a scaling decision has seen the workers as they are now, then waits for the next decision. */
  const idleFor = async (ms: number) => {
    await s.hangar.scaler.poke()
    mono.advance(ms)
    await s.hangar.scaler.poke()
  }

  const health = async (ep: string) => (await jobCall(s, 'GET', `/v2/${ep}/health`)).body
  const until = async (probe: () => Promise<boolean>, timeoutMs = 15_000) => {
    const end = Date.now() + timeoutMs
    while (!(await probe())) {
      if (Date.now() > end) throw new Error('condition not reached in time')
      await new Promise((r) => setTimeout(r, 50))
    }
  }

  it('keeps workers.min running without jobs', async () => {
    const ep = (
      await createEndpoint(
        s,
        endpointBody('hangar/echo:latest', { name: 'warm', workers: { min: 1, max: 2, idleTimeout: 1 } }),
      )
    ).id
    await until(async () => (await health(ep)).workers.idle === 1)
    // Past the idle timeout the minimum stays.
    await idleFor(1_100)
    expect((await health(ep)).workers).toMatchObject({ idle: 1, running: 0 })
  })

  it('starts workers up to workers.max while jobs wait, then stops idle ones after idleTimeout', async () => {
    const ep = (
      await createEndpoint(
        s,
        endpointBody('hangar/sleep:latest', { name: 'burst', workers: { min: 0, max: 2, idleTimeout: 1 } }),
      )
    ).id
    const ids = []
    for (let i = 0; i < 5; i++) ids.push((await jobCall(s, 'POST', `/v2/${ep}/run`, { input: { ms: 300 } })).body.id)
    let most = 0
    const sampling = (async () => {
      for (let i = 0; i < 60; i++) {
        const w = (await health(ep)).workers
        most = Math.max(most, w.initializing + w.idle + w.running)
        await new Promise((r) => setTimeout(r, 25))
      }
    })()
    for (const id of ids) expect((await waitFinal(s, ep, id)).status).toBe('COMPLETED')
    await sampling
    expect(most).toBe(2)
    const workerIds = new Set((await s.hangar.store.workers.listRecent(ep, 10)).map((w) => w.id))
    expect(workerIds.size).toBe(2)
    await until(async () => (await health(ep)).workers.idle === 2)
    await idleFor(1_100)
    await until(async () => (await s.hangar.store.workers.listRecent(ep, 10)).every((w) => w.state === 'EXITED'))
    expect((await health(ep)).workers).toMatchObject({ idle: 0, running: 0, initializing: 0 })
  })

  it('starts no worker for lowPriority jobs alone; a normal job brings one that serves both', async () => {
    const ep = (
      await createEndpoint(
        s,
        endpointBody('hangar/echo:latest', { name: 'low', workers: { min: 0, max: 1, idleTimeout: 60 } }),
      )
    ).id
    const low = (await jobCall(s, 'POST', `/v2/${ep}/run`, { input: { low: true }, policy: { lowPriority: true } }))
      .body.id
    await s.hangar.scaler.poke()
    expect(await health(ep)).toMatchObject({ jobs: { inQueue: 1 }, workers: { initializing: 0, idle: 0, running: 0 } })
    const normal = (await jobCall(s, 'POST', `/v2/${ep}/runsync`, { input: { low: false } })).body
    expect(normal.status).toBe('COMPLETED')
    expect((await waitFinal(s, ep, low)).status).toBe('COMPLETED')
  })

  it('stops idle workers of a REQUEST_COUNT queue endpoint after the configured idle time', async () => {
    const ep = (
      await createEndpoint(
        s,
        endpointBody('hangar/echo:latest', {
          name: 'rc',
          scaling: { type: 'REQUEST_COUNT', requestCount: 1 },
          workers: { min: 0, max: 1 },
        }),
      )
    ).id
    expect((await jobCall(s, 'POST', `/v2/${ep}/runsync`, { input: {} })).body.status).toBe('COMPLETED')
    await until(async () => (await health(ep)).workers.idle === 1)
    await idleFor(400)
    expect((await health(ep)).workers.idle).toBe(0)
  })

  it('serves worker logs only for workers of the caller’s endpoint', async () => {
    const ep = (await createEndpoint(s, endpointBody('hangar/echo:latest', { name: 'logs' }))).id
    const job = (await jobCall(s, 'POST', `/v2/${ep}/runsync`, { input: {} })).body
    const other = await s.accountKey('stranger')
    const foreign = await s.api('GET', `/v2/serverless/${ep}/workers/${job.workerId}/logs`, undefined, other)
    expect(foreign.status).toBe(404)
    const unknown = await s.api('GET', `/v2/serverless/${ep}/workers/nosuchworker/logs`)
    expect(unknown.status).toBe(404)
    const ac = new AbortController()
    const res = await fetch(`${s.url}/v2/serverless/${ep}/workers/${job.workerId}/logs?source=system`, {
      headers: { authorization: `Bearer ${s.adminKey}` },
      signal: ac.signal,
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/event-stream')
    const reader = res.body!.getReader()
    const { value } = await reader.read()
    ac.abort()
    expect(Buffer.from(value!).toString()).toMatch(
      /^id: \S+\/\d{12}\ndata: \{"ts":"[^"]+","source":"system","line":"starting: /,
    )
  })

  it('ends the log stream of a worker that has exited after sending its history', async () => {
    const ep = (
      await createEndpoint(
        s,
        endpointBody('hangar/echo:latest', { name: 'gone', workers: { min: 0, max: 1, idleTimeout: 1 } }),
      )
    ).id
    const job = (await jobCall(s, 'POST', `/v2/${ep}/runsync`, { input: {} })).body
    // Idle past its timeout, the worker is stopped; its log has ended.
    await until(async () => (await health(ep)).workers.idle === 1)
    await idleFor(1_100)
    expect((await health(ep)).workers.idle).toBe(0)
    const res = await fetch(`${s.url}/v2/serverless/${ep}/workers/${job.workerId}/logs?source=system`, {
      headers: { authorization: `Bearer ${s.adminKey}` },
      signal: AbortSignal.timeout(10_000),
    })
    expect(res.status).toBe(200)
    // The whole body arrives and the response ends (it used to hang, and kept the server from exiting).
    expect(await res.text()).toMatch(/starting: /)
  })
})
