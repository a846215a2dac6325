import runpodSdk from 'runpod-sdk'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createEndpoint, endpointBody, waitStatus } from './helpers/endpoints.js'
import { startTestServer, type TestServer } from './helpers/server.js'

// The unmodified npm client, pointed at Hangar: every call must get exactly HTTP 200 and the shapes it reads.
describe('runpod-sdk against Hangar', () => {
  let s: TestServer
  let sdk: ReturnType<typeof runpodSdk>
  let echo: string
  let stream: string
  let sleep: string
  let parked: string
  beforeAll(async () => {
    s = await startTestServer({ jobs: { pingIntervalMs: 500 } })
    sdk = runpodSdk(s.adminKey, { baseUrl: `${s.url}/v2` })
    echo = (await createEndpoint(s, endpointBody('hangar/echo:latest'))).id
    stream = (await createEndpoint(s, endpointBody('hangar/stream:latest'))).id
    sleep = (await createEndpoint(s, endpointBody('hangar/sleep:latest'))).id
    parked = (
      await createEndpoint(s, endpointBody('hangar/echo:latest', { name: 'parked', workers: { min: 0, max: 0 } }))
    ).id
    // runSync prints each status it polls; keep the test output clean.
    vi.spyOn(console, 'log').mockImplementation(() => {})
  })
  afterAll(async () => {
    vi.restoreAllMocks()
    await s.stop()
  })

  it('runSync returns the completed job with its output', async () => {
    const r = await sdk.endpoint(echo)!.runSync({ input: { prompt: 'hello' } })
    expect(r).toMatchObject({
      status: 'COMPLETED',
      output: { prompt: 'hello' },
      started: true,
      completed: true,
      succeeded: true,
    })
  })

  it('runSync follows a job past its first wait through status-sync', async () => {
    // runsync?wait=3000 answers IN_PROGRESS (the job sleeps 4 s); the client then waits on /status-sync for the
    // rest, for as long again as its timeout (room for the worker's cold start on a loaded machine).
    const r = await sdk.endpoint(sleep)!.runSync({ input: { ms: 4_000 } }, 3_000)
    expect(r).toMatchObject({ status: 'COMPLETED', output: { slept: 4_000 }, completed: true })
  })

  it('run then status', async () => {
    const ep = sdk.endpoint(echo)!
    const run = await ep.run({ input: { a: 1 } })
    expect(run).toEqual({ id: expect.any(String), status: 'IN_QUEUE' })
    const done = await ep.statusSync(run.id)
    expect(done).toMatchObject({ id: run.id, status: 'COMPLETED', output: { a: 1 } })
    expect(await ep.status(run.id)).toMatchObject({ status: 'COMPLETED', output: { a: 1 }, completed: true })
  })

  it('stream yields every chunk of a generator worker', async () => {
    const ep = sdk.endpoint(stream)!
    const run = await ep.run({ input: { count: 4, delayMs: 10 } })
    const got: unknown[] = []
    for await (const chunk of ep.stream(run.id)) got.push(chunk)
    expect(got).toEqual(['chunk 1', 'chunk 2', 'chunk 3', 'chunk 4'].map((output) => ({ output })))
  })

  it('cancel stops a running job', async () => {
    const ep = sdk.endpoint(sleep)!
    const run = await ep.run({ input: { ms: 60_000 } })
    await waitStatus(s, sleep, run.id, 'IN_PROGRESS')
    expect(await ep.cancel(run.id)).toEqual({ id: run.id, status: 'CANCELLED' })
    expect(await ep.status(run.id)).toMatchObject({ status: 'CANCELLED', completed: true, succeeded: false })
  })

  it('health and purgeQueue', async () => {
    const ep = sdk.endpoint(parked)!
    await ep.run({ input: {} })
    await ep.run({ input: {} })
    const health = await ep.health()
    expect(health.jobs).toMatchObject({ inQueue: 2, inProgress: 0 })
    expect(health.workers).toMatchObject({ idle: 0, running: 0, initializing: 0, ready: 0, throttled: 0 })
    expect(await ep.purgeQueue()).toEqual({ removed: 2, status: 'completed' })
    expect((await ep.health()).jobs.inQueue).toBe(0)
  })
})
