import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from './helpers/clock.js'
import { createEndpoint, endpointBody, jobCall } from './helpers/endpoints.js'
import { startTestServer, type TestServer } from './helpers/server.js'

// Per-endpoint job-operation limits (the spec's table) and the dynamic rule. The clock is manual and set
// to the start of a 10-second window, so no window rolls over unless a test moves it.
describe('job operation limits', () => {
  let s: TestServer
  const clock = new ManualClock()
  beforeAll(async () => {
    clock.set(Math.ceil(Date.now() / 10_000) * 10_000 + 60_000)
    s = await startTestServer({ rateLimits: { perWorker: { rate: 3, concurrent: 1 } } }, { clock })
  })
  afterAll(() => s.stop())

  const parked = () => endpointBody('hangar/echo:latest', { workers: { min: 0, max: 0, idleTimeout: 60 } })

  it('limits /purge-queue to 2 per 10 s per endpoint, with Retry-After, and admits again in the next window', async () => {
    const ep = await createEndpoint(s, parked())
    const other = await createEndpoint(s, parked())
    expect((await jobCall(s, 'POST', `/v2/${ep.id}/purge-queue`, {})).status).toBe(200)
    expect((await jobCall(s, 'POST', `/v2/${ep.id}/purge-queue`, {})).status).toBe(200)
    const over = await jobCall(s, 'POST', `/v2/${ep.id}/purge-queue`, {})
    expect(over.status).toBe(429)
    expect(over.body.detail).toMatch(/purge-queue/)
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    // Limits are per endpoint.
    expect((await jobCall(s, 'POST', `/v2/${other.id}/purge-queue`, {})).status).toBe(200)
    clock.advance(10_000)
    expect((await jobCall(s, 'POST', `/v2/${ep.id}/purge-queue`, {})).status).toBe(200)
  })

  it('limits /run to 1000 per 10 s', async () => {
    clock.advance(10_000)
    const ep = await createEndpoint(s, parked())
    const statuses: number[] = []
    for (let batch = 0; batch < 20; batch++) {
      const res = await Promise.all(
        Array.from({ length: 50 }, () => jobCall(s, 'POST', `/v2/${ep.id}/run`, { input: {} })),
      )
      statuses.push(...res.map((r) => r.status))
    }
    expect(statuses.filter((x) => x === 200)).toHaveLength(1000)
    const over = await jobCall(s, 'POST', `/v2/${ep.id}/run`, { input: {} })
    expect(over.status).toBe(429)
    expect(over.headers.get('retry-after')).toBeTruthy()
  })

  it('holds a concurrency slot for the whole of a long-poll and frees it however the request ends', async () => {
    clock.advance(10_000)
    const ep = await createEndpoint(s, parked())
    const job = await jobCall(s, 'POST', `/v2/${ep.id}/run`, { input: {} })
    // /status-sync shares the /status limits: 400 concurrent. Hold 400 (the job never runs: max 0 workers).
    const aborts = Array.from({ length: 400 }, () => new AbortController())
    const held = aborts.map((a) =>
      fetch(`${s.url}/v2/${ep.id}/status-sync/${job.body.id}?wait=20000`, {
        headers: { authorization: s.adminKey },
        signal: a.signal,
      }).catch(() => null),
    )
    // Wait until the server holds all of them: the 401st is refused as concurrent.
    let over
    for (let i = 0; i < 100; i++) {
      over = await jobCall(s, 'GET', `/v2/${ep.id}/status/${job.body.id}`)
      if (over.status === 429) break
      await new Promise((r) => setTimeout(r, 50))
    }
    expect(over!.status).toBe(429)
    expect(over!.body.detail).toMatch(/concurrent/)
    // Clients that disconnect give their slots back.
    for (const a of aborts.slice(0, 10)) a.abort()
    await Promise.all(held.slice(0, 10))
    let after
    for (let i = 0; i < 100; i++) {
      after = await jobCall(s, 'GET', `/v2/${ep.id}/status/${job.body.id}`)
      if (after.status === 200) break
      await new Promise((r) => setTimeout(r, 50))
    }
    expect(after!.status).toBe(200)
    for (const a of aborts) a.abort()
    await Promise.all(held)
  })

  it('raises the limit with running workers (dynamic rule: running workers x per-worker allowance)', async () => {
    clock.advance(10_000)
    const ep = await createEndpoint(
      s,
      endpointBody('hangar/echo:latest', { workers: { min: 1, max: 1, idleTimeout: 60 } }),
    )
    // Wait for the worker kept by workers.min to be up.
    for (let i = 0; i < 200; i++) {
      const h = await jobCall(s, 'GET', `/v2/${ep.id}/health`)
      if (h.body.workers.idle + h.body.workers.running >= 1) break
      await new Promise((r) => setTimeout(r, 50))
    }
    // One running worker x 3 per 10 s beats the base of 2.
    const statuses = []
    for (let i = 0; i < 4; i++) statuses.push((await jobCall(s, 'POST', `/v2/${ep.id}/purge-queue`, {})).status)
    expect(statuses).toEqual([200, 200, 200, 429])
  })
})
