import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createEndpoint, endpointBody, jobCall, waitFinal, waitStatus } from './helpers/endpoints.js'
import { startTestServer, type TestServer } from './helpers/server.js'

describe('TypeScript worker SDK and worker visibility', () => {
  let s: TestServer
  let ep: string
  beforeAll(async () => {
    s = await startTestServer({
      jobs: { pingIntervalMs: 500 },
      images: { 'test/sdk:latest': { command: [process.execPath, join(import.meta.dirname, 'fixtures', 'sdk-worker.mjs')] } },
    })
    ep = (await createEndpoint(s, endpointBody('test/sdk:latest', { workers: { min: 0, max: 1, idleTimeout: 60 } }))).id
  })
  afterAll(() => s.stop())

  it('runs two jobs at once on one worker with concurrency 2, showing progress while they run', async () => {
    const a = (await jobCall(s, 'POST', `/v2/${ep}/run`, { input: { ms: 1_500 } })).body.id
    const b = (await jobCall(s, 'POST', `/v2/${ep}/run`, { input: { ms: 1_500 } })).body.id
    const ra = await waitStatus(s, ep, a, 'IN_PROGRESS')
    const rb = await waitStatus(s, ep, b, 'IN_PROGRESS')
    expect(ra.workerId).toBe(rb.workerId)
    const until = Date.now() + 5_000
    let shown = await jobCall(s, 'GET', `/v2/${ep}/status/${a}`)
    while (shown.body.output === undefined && Date.now() < until) shown = await jobCall(s, 'GET', `/v2/${ep}/status/${a}`)
    expect(shown.body).toMatchObject({ status: 'IN_PROGRESS', output: { step: 'started' } })
    const list = await s.api('GET', `/v2/serverless/${ep}/workers`)
    expect(list.status).toBe(200)
    expect(list.body).toMatchObject({ endpointVersion: 1, summary: { running: 1, idle: 0, initializing: 0, throttled: 0, unhealthy: 0, total: 1 } })
    expect(list.body.workers[0]).toMatchObject({ id: ra.workerId, status: 'RUNNING', isStale: false, gpuCount: 0, version: 1, image: 'test/sdk:latest', gpuTypeId: null, dataCenterId: 'LOCAL-1' })
    expect((await waitFinal(s, ep, a)).output).toEqual({ done: a })
    expect((await waitFinal(s, ep, b)).output).toEqual({ done: b })
  })

  it('reports a worker that cannot start, with the reason, as unhealthy', async () => {
    const broken = (await createEndpoint(s, endpointBody('registry.example/unknown:1', { name: 'broken' }))).id
    await jobCall(s, 'POST', `/v2/${broken}/run`, { input: {} })
    const end = Date.now() + 10_000
    let health = (await jobCall(s, 'GET', `/v2/${broken}/health`)).body
    while (health.workers.unhealthy === 0 && Date.now() < end) health = (await jobCall(s, 'GET', `/v2/${broken}/health`)).body
    expect(health).toMatchObject({ jobs: { inQueue: 1 }, workers: { unhealthy: 1, running: 0 } })
    const [record] = await s.hangar.store.workers.listRecent(broken, 1)
    expect(record).toMatchObject({ state: 'FAILED', lastError: 'image "registry.example/unknown:1" has no local command: set the endpoint\'s entrypoint/cmd, or map the image in the "images" configuration' })
  })
})
