import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createEndpoint, endpointBody, jobCall, waitFinal } from './helpers/endpoints.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

describe('queue job operations', () => {
  let s: TestServer
  let echo: string
  let parked: string
  let fail: string
  let stream: string
  beforeAll(async () => {
    s = await startTestServer({ jobs: { pingIntervalMs: 500 } })
    echo = (await createEndpoint(s, endpointBody('hangar/echo:latest'))).id
    // max 0: nothing ever takes its jobs, so they stay queued.
    parked = (
      await createEndpoint(s, endpointBody('hangar/echo:latest', { name: 'parked', workers: { min: 0, max: 0 } }))
    ).id
    fail = (await createEndpoint(s, endpointBody('hangar/fail:latest'))).id
    stream = (await createEndpoint(s, endpointBody('hangar/stream:latest'))).id
  })
  afterAll(() => s.stop())

  it('runs a job asynchronously: /run answers IN_QUEUE at once, /status has the result', async () => {
    const run = await jobCall(s, 'POST', `/v2/${echo}/run`, { input: { n: 1 } })
    expect(run.status).toBe(200)
    expect(run.body).toEqual({ id: expect.stringMatching(UUID), status: 'IN_QUEUE' })
    const done = await waitFinal(s, echo, run.body.id)
    expect(done).toMatchObject({
      id: run.body.id,
      status: 'COMPLETED',
      output: { n: 1 },
      delayTime: expect.any(Number),
      executionTime: expect.any(Number),
    })
    const status = await jobCall(s, 'GET', `/v2/${echo}/status/${run.body.id}`)
    expect(status.status).toBe(200)
    expect(status.body).toEqual(done)
  })

  it('runs a job synchronously with a sync- id and the output in the reply', async () => {
    const r = await jobCall(s, 'POST', `/v2/${echo}/runsync`, { input: { msg: 'hi' } })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ id: expect.stringMatching(/^sync-/), status: 'COMPLETED', output: { msg: 'hi' } })
    expect(Number.isInteger(r.body.delayTime) && Number.isInteger(r.body.executionTime)).toBe(true)
  })

  it('accepts the key bare or as Bearer; 401 for a wrong key or one without permission; 404 for unknown ids', async () => {
    expect((await jobCall(s, 'GET', `/v2/${echo}/health`, undefined, { bare: true })).status).toBe(200)
    expect((await jobCall(s, 'GET', `/v2/${echo}/health`)).status).toBe(200)
    const wrong = await jobCall(s, 'GET', `/v2/${echo}/health`, undefined, {
      key: 'hk_notAKeyThatExistsAnywhere00',
      bare: true,
    })
    expect(wrong.status).toBe(401)
    expect(wrong.body.detail).toMatch(/unknown API key/)
    const reader = await s.accountKey('reader', 'READ_ONLY')
    const ro = await jobCall(s, 'POST', `/v2/${echo}/run`, { input: {} }, { key: reader, bare: true })
    expect(ro.status).toBe(401)
    expect(ro.body.detail).toMatch(/READ_ONLY key cannot use POST/)
    const restricted = await s.accountKey('admin', 'RESTRICTED', [parked])
    expect((await jobCall(s, 'POST', `/v2/${echo}/run`, { input: {} }, { key: restricted })).status).toBe(401)
    expect((await jobCall(s, 'POST', `/v2/${parked}/run`, { input: {} }, { key: restricted })).status).toBe(200)
    const other = await s.accountKey('other-co')
    const foreign = await jobCall(s, 'POST', `/v2/${echo}/run`, { input: {} }, { key: other })
    expect(foreign.status).toBe(404)
    expect(foreign.body.detail).toMatch(/endpoint ".*" was not found/)
    expect((await jobCall(s, 'GET', `/v2/nosuchendpoint/status/x`)).status).toBe(404)
    const job = await jobCall(s, 'GET', `/v2/${echo}/status/00000000-0000-0000-0000-000000000000`)
    expect(job.status).toBe(404)
    expect(job.body.detail).toMatch(/job "00000000-0000-0000-0000-000000000000" was not found/)
  })

  it('rejects bodies that break the job schema with 400 naming each field', async () => {
    const cases: Array<[unknown, string[]]> = [
      [{}, ['input: is required']],
      [{ input: [1] }, ['input: must be object, got array']],
      [{ input: {}, bogus: 1 }, ["$: additional properties 'bogus' not allowed"]],
      [{ input: {}, policy: { executionTimeout: 4_999 } }, ['policy.executionTimeout: must be >= 5000']],
      [{ input: {}, policy: { ttl: 9_999 } }, ['policy.ttl: must be >= 10000']],
      [{ input: {}, policy: { ttl: 604_800_001 } }, ['policy.ttl: must be <= 604800000']],
      [
        { input: {}, policy: { executionTimeout: 604_800_001, extra: true } },
        ['policy.executionTimeout: must be <= 604800000', "policy: additional properties 'extra' not allowed"],
      ],
      [
        { input: {}, s3Config: { accessId: 'a' } },
        ['s3Config.accessSecret: is required', 's3Config.bucketName: is required', 's3Config.endpointUrl: is required'],
      ],
      [{ input: {}, webhook: 'not a url' }, ['webhook: must be a valid uri, got "not a url"']],
    ]
    for (const [body, errors] of cases) {
      const r = await jobCall(s, 'POST', `/v2/${parked}/run`, body)
      expect(r.status, JSON.stringify(body)).toBe(400)
      expect(r.body.errors).toEqual(expect.arrayContaining(errors))
    }
    // One mistake, one error (issue 19): not a second one for the same value.
    expect(
      (await jobCall(s, 'POST', `/v2/${parked}/run`, { input: {}, webhook: 'not a url' })).body.errors,
    ).toHaveLength(1)
    const malformed = await jobCall(s, 'POST', `/v2/${parked}/run`, '{"input": ')
    expect(malformed.status).toBe(400)
  })

  it('bounds runsync wait to 1000..300000 ms and answers the current status when the wait ends', async () => {
    for (const wait of [999, 300_001]) {
      const r = await jobCall(s, 'POST', `/v2/${parked}/runsync?wait=${wait}`, { input: {} })
      expect(r.status).toBe(400)
      expect(r.body.errors[0]).toMatch(/^query\.wait: must be/)
    }
    const started = Date.now()
    const r = await jobCall(s, 'POST', `/v2/${parked}/runsync?wait=1000`, { input: {} })
    expect(Date.now() - started).toBeGreaterThanOrEqual(900)
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ id: expect.stringMatching(/^sync-/), status: 'IN_QUEUE' })
  })

  it('limits payloads: 10 MB on /run, 20 MB on /runsync, with a 413 problem', async () => {
    const big = JSON.stringify({ input: { blob: 'x'.repeat(11 * 1024 * 1024) }, policy: { lowPriority: true } })
    const run = await jobCall(s, 'POST', `/v2/${parked}/run`, big)
    expect(run.status).toBe(413)
    expect(run.headers.get('content-type')).toMatch(/application\/problem\+json/)
    expect(run.body.detail).toMatch(/larger than the 10485760-byte limit/)
    const sync = await jobCall(s, 'POST', `/v2/${parked}/runsync?wait=1000`, big)
    expect(sync.status).toBe(200)
    const huge = JSON.stringify({ input: { blob: 'x'.repeat(21 * 1024 * 1024) } })
    expect((await jobCall(s, 'POST', `/v2/${parked}/runsync?wait=1000`, huge)).status).toBe(413)
  })

  it('cancels a queued job at once, and cancelling again changes nothing', async () => {
    const run = await jobCall(s, 'POST', `/v2/${parked}/run`, { input: {} })
    const c = await jobCall(s, 'POST', `/v2/${parked}/cancel/${run.body.id}`)
    expect(c.status).toBe(200)
    expect(c.body).toEqual({ id: run.body.id, status: 'CANCELLED' })
    expect((await jobCall(s, 'GET', `/v2/${parked}/status/${run.body.id}`)).body.status).toBe('CANCELLED')
    expect((await jobCall(s, 'POST', `/v2/${parked}/cancel/${run.body.id}`, {})).body).toEqual({
      id: run.body.id,
      status: 'CANCELLED',
    })
  })

  it('accepts bodyless cancel and purge-queue labelled application/json, as the Python client sends them', async () => {
    const run = await jobCall(s, 'POST', `/v2/${parked}/run`, { input: {} })
    const c = await jobCall(s, 'POST', `/v2/${parked}/cancel/${run.body.id}`, '', { contentType: 'application/json' })
    expect(c).toMatchObject({ status: 200, body: { id: run.body.id, status: 'CANCELLED' } })
    const p = await jobCall(s, 'POST', `/v2/${parked}/purge-queue`, '', { contentType: 'application/json' })
    expect(p.status).toBe(200)
  })

  it('fails a job whose handler throws, and retries it under the same id with its input', async () => {
    const run = await jobCall(s, 'POST', `/v2/${fail}/run`, { input: { message: 'boom' } })
    const failed = await waitFinal(s, fail, run.body.id)
    expect(failed).toMatchObject({ status: 'FAILED', error: 'boom' })
    expect(failed).not.toHaveProperty('output')
    const retry = await jobCall(s, 'POST', `/v2/${fail}/retry/${run.body.id}`)
    expect(retry.status).toBe(200)
    expect(retry.body).toEqual({ id: run.body.id, status: 'IN_QUEUE' })
    expect(await waitFinal(s, fail, run.body.id)).toMatchObject({ id: run.body.id, status: 'FAILED', error: 'boom' })
  })

  it('refuses to retry a job that is not FAILED or TIMED_OUT', async () => {
    const r = await jobCall(s, 'POST', `/v2/${echo}/runsync`, { input: {} })
    const retry = await jobCall(s, 'POST', `/v2/${echo}/retry/${r.body.id}`)
    expect(retry.status).toBe(400)
    expect(retry.body.detail).toMatch(/is COMPLETED; only FAILED or TIMED_OUT jobs can be retried/)
  })

  it('purges only waiting jobs and counts them in /health before', async () => {
    const ids = []
    for (let i = 0; i < 3; i++) ids.push((await jobCall(s, 'POST', `/v2/${parked}/run`, { input: { i } })).body.id)
    const health = await jobCall(s, 'GET', `/v2/${parked}/health`)
    expect(health.body.jobs.inQueue).toBeGreaterThanOrEqual(3)
    expect(health.body.workers).toEqual({ idle: 0, initializing: 0, ready: 0, running: 0, throttled: 0, unhealthy: 0 })
    const purge = await jobCall(s, 'POST', `/v2/${parked}/purge-queue`, {})
    expect(purge.status).toBe(200)
    expect(purge.body).toEqual({ removed: health.body.jobs.inQueue, status: 'completed' })
    for (const id of ids) expect((await jobCall(s, 'GET', `/v2/${parked}/status/${id}`)).status).toBe(404)
    expect((await jobCall(s, 'GET', `/v2/${parked}/health`)).body.jobs.inQueue).toBe(0)
  })

  it('counts completed and failed jobs and workers in /health', async () => {
    const h = await jobCall(s, 'GET', `/v2/${fail}/health`)
    expect(h.body.jobs).toMatchObject({
      failed: expect.any(Number),
      completed: 0,
      inQueue: 0,
      inProgress: 0,
      retried: 0,
    })
    expect(h.body.jobs.failed).toBeGreaterThanOrEqual(1)
    expect(h.body.workers.idle + h.body.workers.running).toBe(1)
  })

  it('streams each chunk once, then the final status', async () => {
    const run = await jobCall(s, 'POST', `/v2/${stream}/run`, { input: { chunks: ['a', 'b', { c: 3 }], delayMs: 20 } })
    const seen: unknown[] = []
    let status = 'IN_QUEUE'
    for (let i = 0; i < 50 && !['COMPLETED', 'FAILED'].includes(status); i++) {
      const r = await jobCall(s, 'GET', `/v2/${stream}/stream/${run.body.id}`)
      expect(r.status).toBe(200)
      expect(Array.isArray(r.body.stream)).toBe(true)
      seen.push(...r.body.stream.map((c: { output: unknown }) => c.output))
      status = r.body.status
    }
    expect(status).toBe('COMPLETED')
    expect(seen).toEqual(['a', 'b', { c: 3 }])
    expect((await jobCall(s, 'GET', `/v2/${stream}/stream/${run.body.id}`)).body).toEqual({
      id: run.body.id,
      status: 'COMPLETED',
      stream: [],
    })
    expect((await jobCall(s, 'GET', `/v2/${stream}/status/${run.body.id}`)).body.output).toEqual(['a', 'b', { c: 3 }])
  })

  it("gives a non-streaming job's output to /stream once", async () => {
    const r = await jobCall(s, 'POST', `/v2/${echo}/runsync`, { input: { x: 1 } })
    expect((await jobCall(s, 'GET', `/v2/${echo}/stream/${r.body.id}`)).body.stream).toEqual([{ output: { x: 1 } }])
    expect((await jobCall(s, 'GET', `/v2/${echo}/stream/${r.body.id}`)).body.stream).toEqual([])
  })
})
