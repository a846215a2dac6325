import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from './helpers/clock.js'
import { createEndpoint, endpointBody, jobCall, readLogsUntil, waitFinal, waitStatus } from './helpers/endpoints.js'
import { startTestServer, type TestServer } from './helpers/server.js'

// Business time (TTL, execution timeout, retention) follows the injected clock; the test moves it and
// runs the deadline sweep instead of waiting minutes.
describe('job deadlines and stopping running jobs', () => {
  let s: TestServer
  let clock: ManualClock
  let sleep: string
  let echo: string
  beforeAll(async () => {
    clock = new ManualClock()
    s = await startTestServer({ jobs: { pingIntervalMs: 500, sweepIntervalMs: 3_600_000 } }, { clock })
    sleep = (
      await createEndpoint(s, endpointBody('hangar/sleep:latest', { workers: { min: 0, max: 2, idleTimeout: 60 } }))
    ).id
    echo = (await createEndpoint(s, endpointBody('hangar/echo:latest'))).id
  })
  afterAll(() => s.stop())

  it('deletes a running job when its TTL elapses and stops it in the worker', async () => {
    const run = await jobCall(s, 'POST', `/v2/${sleep}/run`, { input: { ms: 60_000 }, policy: { ttl: 10_000 } })
    const running = await waitStatus(s, sleep, run.body.id, 'IN_PROGRESS')
    clock.advance(10_000)
    await s.hangar.sweeper.sweep()
    const gone = await jobCall(s, 'GET', `/v2/${sleep}/status/${run.body.id}`)
    expect(gone.status).toBe(404)
    const logs = await readLogsUntil(s, sleep, running.workerId, new RegExp(`job ${run.body.id}: stopped`))
    expect(logs[0].id).toMatch(/^\d{4}-\d\d-\d\dT.*Z\/\d{12}$/)
  })

  it('times a job out after its executionTimeout (overriding the endpoint timeout) and stops it in the worker', async () => {
    const run = await jobCall(s, 'POST', `/v2/${sleep}/run`, {
      input: { ms: 60_000 },
      policy: { executionTimeout: 5_000 },
    })
    const running = await waitStatus(s, sleep, run.body.id, 'IN_PROGRESS')
    clock.advance(4_999)
    await s.hangar.sweeper.sweep()
    expect((await jobCall(s, 'GET', `/v2/${sleep}/status/${run.body.id}`)).body.status).toBe('IN_PROGRESS')
    clock.advance(1)
    await s.hangar.sweeper.sweep()
    const timedOut = await jobCall(s, 'GET', `/v2/${sleep}/status/${run.body.id}`)
    expect(timedOut.body).toMatchObject({
      status: 'TIMED_OUT',
      error: 'execution timeout: the job ran longer than 5000 ms',
      executionTime: 5_000,
    })
    await readLogsUntil(s, sleep, running.workerId, new RegExp(`job ${run.body.id}: stopped`))
    // TIMED_OUT can be retried: back in the queue under the same id.
    expect((await jobCall(s, 'POST', `/v2/${sleep}/retry/${run.body.id}`)).body).toEqual({
      id: run.body.id,
      status: 'IN_QUEUE',
    })
    await waitStatus(s, sleep, run.body.id, 'IN_PROGRESS')
    expect((await jobCall(s, 'POST', `/v2/${sleep}/cancel/${run.body.id}`)).body.status).toBe('CANCELLED')
  })

  it('cancels a running job and stops it in the worker', async () => {
    const run = await jobCall(s, 'POST', `/v2/${sleep}/run`, { input: { ms: 60_000 } })
    const running = await waitStatus(s, sleep, run.body.id, 'IN_PROGRESS')
    const c = await jobCall(s, 'POST', `/v2/${sleep}/cancel/${run.body.id}`)
    expect(c.body).toEqual({ id: run.body.id, status: 'CANCELLED' })
    await readLogsUntil(s, sleep, running.workerId, new RegExp(`job ${run.body.id}: stopped`))
    expect((await jobCall(s, 'GET', `/v2/${sleep}/status/${run.body.id}`)).body.status).toBe('CANCELLED')
  })

  it('keeps /run results 30 minutes after completion, then answers 404 and refuses retry', async () => {
    const run = await jobCall(s, 'POST', `/v2/${echo}/run`, { input: {} })
    await waitFinal(s, echo, run.body.id)
    clock.advance(30 * 60_000 - 1)
    expect((await jobCall(s, 'GET', `/v2/${echo}/status/${run.body.id}`)).status).toBe(200)
    clock.advance(1)
    expect((await jobCall(s, 'GET', `/v2/${echo}/status/${run.body.id}`)).status).toBe(404)
    expect((await jobCall(s, 'POST', `/v2/${echo}/retry/${run.body.id}`)).status).toBe(404)
    await s.hangar.sweeper.sweep()
    expect(await s.hangar.store.jobs.get(run.body.id)).toBeUndefined()
  })

  it('keeps /runsync results 1 minute, or as long as the wait up to 5 minutes', async () => {
    const short = await jobCall(s, 'POST', `/v2/${echo}/runsync`, { input: {} })
    const long = await jobCall(s, 'POST', `/v2/${echo}/runsync?wait=200000`, { input: {} })
    expect([short.body.status, long.body.status]).toEqual(['COMPLETED', 'COMPLETED'])
    clock.advance(60_000)
    expect((await jobCall(s, 'GET', `/v2/${echo}/status/${short.body.id}`)).status).toBe(404)
    expect((await jobCall(s, 'GET', `/v2/${echo}/status/${long.body.id}`)).status).toBe(200)
    clock.advance(140_000)
    expect((await jobCall(s, 'GET', `/v2/${echo}/status/${long.body.id}`)).status).toBe(404)
  })

  it('lets /status?ttl= replace the time-to-live counted from submission', async () => {
    const run = await jobCall(s, 'POST', `/v2/${echo}/run`, { input: {} })
    await waitFinal(s, echo, run.body.id)
    const kept = await jobCall(s, 'GET', `/v2/${echo}/status/${run.body.id}?ttl=3600000`)
    expect(kept.status).toBe(200)
    clock.advance(40 * 60_000)
    expect((await jobCall(s, 'GET', `/v2/${echo}/status/${run.body.id}`)).status).toBe(200)
    expect((await jobCall(s, 'GET', `/v2/${echo}/status/${run.body.id}?ttl=9999`)).status).toBe(400)
  })

  it('deletes a waiting job when its TTL elapses', async () => {
    const parked = (
      await createEndpoint(s, endpointBody('hangar/echo:latest', { name: 'parked', workers: { min: 0, max: 0 } }))
    ).id
    const run = await jobCall(s, 'POST', `/v2/${parked}/run`, { input: {}, policy: { ttl: 10_000 } })
    clock.advance(10_000)
    await s.hangar.sweeper.sweep()
    expect((await jobCall(s, 'GET', `/v2/${parked}/status/${run.body.id}`)).status).toBe(404)
    expect(await s.hangar.store.jobs.get(run.body.id)).toBeUndefined()
  })
})
