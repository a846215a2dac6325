import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { pidOf } from './helpers/runtime.js'
import { createEndpoint, endpointBody, jobCall, waitFinal } from './helpers/endpoints.js'
import { startTestServer, type TestServer } from './helpers/server.js'

describe('worker faults', () => {
  let s: TestServer
  beforeAll(async () => {
    s = await startTestServer({ jobs: { pingIntervalMs: 200, missedPings: 3, sweepIntervalMs: 100 } })
  })
  afterAll(() => s.stop())

  it('requeues a job whose worker process dies, and fails it after the third loss', async () => {
    const ep = (await createEndpoint(s, endpointBody('hangar/sleep:latest', { name: 'crashy' }))).id
    const run = await jobCall(s, 'POST', `/v2/${ep}/run`, { input: { exit: 3 } })
    const final = await waitFinal(s, ep, run.body.id, 60_000)
    expect(final).toMatchObject({
      status: 'FAILED',
      retries: 3,
      error: expect.stringMatching(/^the job lost its worker 3 times; last: worker \w+ exited \(code 3\)$/),
    })
    const health = await jobCall(s, 'GET', `/v2/${ep}/health`)
    expect(health.body.jobs).toMatchObject({ failed: 1, retried: 3 })
    expect(health.body.workers.unhealthy).toBeGreaterThanOrEqual(1)
  }, 60_000)

  it('requeues a job whose worker stops sending heartbeats, and kills that worker', async () => {
    const ep = (await createEndpoint(s, endpointBody('hangar/sleep:latest', { name: 'frozen' }))).id
    // The job blocks its worker's event loop: no heartbeat for longer than 3 intervals.
    const run = await jobCall(s, 'POST', `/v2/${ep}/run`, { input: { ms: 10, freezeMs: 5_000 } })
    const first = await waitUntil(async () => {
      const r = await jobCall(s, 'GET', `/v2/${ep}/status/${run.body.id}`)
      return r.body.retries === 1 ? r.body : undefined
    })
    expect(first.status).toMatch(/IN_QUEUE|IN_PROGRESS|FAILED/)
    const records = await s.hangar.store.workers.listRecent(ep, 10)
    const lost = records.find((w) => w.state === 'FAILED')!
    expect(lost.lastError).toMatch(/sent no heartbeat for \d+ ms \(3 intervals of 200 ms\)/)
    expect(() => process.kill(pidOf(lost.runtimeRef), 0)).toThrow()
    await jobCall(s, 'POST', `/v2/${ep}/cancel/${run.body.id}`)
  }, 60_000)

  it('tells "no capacity" apart from crashing workers in /health', async () => {
    // Eight 8-GPU workers of one type cannot be placed on the default fleet: the job waits, throttled.
    const ep = (
      await createEndpoint(
        s,
        endpointBody('hangar/echo:latest', { name: 'big', cpu: undefined, gpu: { pools: ['ADA_80_PRO'], count: 8 } }),
      )
    ).id
    const run = await jobCall(s, 'POST', `/v2/${ep}/run`, { input: {} })
    const health = await waitUntil(async () => {
      const h = await jobCall(s, 'GET', `/v2/${ep}/health`)
      return h.body.workers.throttled > 0 ? h.body : undefined
    })
    expect(health).toMatchObject({ jobs: { inQueue: 1 }, workers: { throttled: 1, unhealthy: 0, running: 0 } })
    await jobCall(s, 'POST', `/v2/${ep}/cancel/${run.body.id}`)
  })
})

async function waitUntil<T>(probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const until = Date.now() + timeoutMs
  for (;;) {
    const v = await probe()
    if (v !== undefined) return v
    if (Date.now() > until) throw new Error('condition not reached in time')
    await new Promise((r) => setTimeout(r, 50))
  }
}
