import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ApiError, Client, errorsOf, unclaimedErrors } from '../console/src/api.js'
import { readEventStream, type ServerEvent } from '../console/src/sse.js'
import { createEndpoint, endpointBody, jobCall } from './helpers/endpoints.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

// The console's API layer runs on fetch and web streams, which Node has too: checked here against a real
// server, so it is covered where no browser is installed.
describe('console API client and SSE reader', () => {
  let s: TestServer
  let client: Client
  beforeAll(async () => {
    s = await startTestServer({ jobs: { pingIntervalMs: 500 } })
    client = new Client(s.adminKey, s.url)
  })
  afterAll(() => s.stop())

  it('turns a 422 problem into errors per field, and leaves unclaimed ones for the banner', async () => {
    const err = await client
      .post('/v2/serverless', { name: '', type: 'QUEUE', templateId: 'hangar-echo', workers: { min: 'x' } })
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ApiError)
    const e = err as ApiError
    expect(e.status).toBe(422)
    expect(errorsOf(e, 'name')).toEqual(['name: must NOT have fewer than 1 characters'])
    expect(errorsOf(e, 'workers')).toEqual([expect.stringMatching(/^workers\.min: /)])
    expect(errorsOf(e, 'work')).toEqual([])
    // scaling is missing too; a form without a scaling field shows it above the form.
    expect(unclaimedErrors(e, ['name', 'workers'])).toEqual([expect.stringMatching(/^scaling: /)])
    expect(unclaimedErrors(e, ['name', 'workers', 'scaling'])).toEqual([])
  })

  it('reports a refused key with the server detail and a network failure as status 0', async () => {
    const bad = await new Client('hk_definitely-not-a-key-000', s.url).get('/v2/serverless').catch((e: unknown) => e)
    expect((bad as ApiError).status).toBe(401)
    expect((bad as ApiError).messages).toEqual(['unknown API key'])
    const down = await new Client(s.adminKey, 'http://127.0.0.1:1').get('/v2/serverless').catch((e: unknown) => e)
    expect((down as ApiError).status).toBe(0)
  })

  it("reads a worker's log stream with the key in a header, resuming after Last-Event-ID", async () => {
    const ep = await createEndpoint(s, endpointBody('hangar/echo:latest'))
    expect((await jobCall(s, 'POST', `/v2/${ep.id}/runsync`, { input: {} })).body.status).toBe('COMPLETED')
    const workerId = await until(
      async () =>
        (await client.get<{ workers: Array<{ id: string }> }>(`/v2/serverless/${ep.id}/workers`)).workers[0]?.id,
    )
    const url = `${s.url}/v2/serverless/${ep.id}/workers/${workerId}/logs?tail=100`

    const first: ServerEvent[] = []
    const ac = new AbortController()
    const reading = readEventStream(
      url,
      client.headers(),
      (e) => {
        first.push(e)
        ac.abort()
      },
      ac.signal,
    ).catch((err: Error) => err)
    expect(((await reading) as Error).name).toBe('AbortError')
    expect(first).toHaveLength(1)
    expect(JSON.parse(first[0].data)).toMatchObject({ source: 'system', line: expect.stringContaining('starting:') })
    expect(first[0].id).toMatch(/\/\d{12}$/)

    // Resumed after the first event: it is not sent again. The worker is stopped so the stream ends.
    const rest: ServerEvent[] = []
    const ac2 = new AbortController()
    const resumed = readEventStream(url, client.headers(), (e) => rest.push(e), ac2.signal, first[0].id)
    await client.patch(`/v2/serverless/${ep.id}`, { workers: { min: 0, max: 0 } })
    await resumed
    expect(rest.map((e) => e.id)).not.toContain(first[0].id)
    expect(rest.length).toBeGreaterThan(0)

    await expect(
      readEventStream(url, { authorization: 'Bearer nope-nope-nope-nope' }, () => {}, new AbortController().signal),
    ).rejects.toThrow(/malformed API key|unknown API key/)
  })
})
