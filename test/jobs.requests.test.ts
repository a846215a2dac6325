import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createEndpoint, endpointBody, jobCall } from './helpers/endpoints.js'
import { startTestServer, type TestServer } from './helpers/server.js'

describe('GET /v2/{endpointId}/requests', () => {
  let s: TestServer
  let held: string
  beforeAll(async () => {
    s = await startTestServer()
    // No worker may start: the jobs stay queued, in submission order.
    held = (await createEndpoint(s, endpointBody('hangar/echo:latest', { workers: { min: 0, max: 0 } }))).id
  })
  afterAll(() => s.stop())

  it('lists the latest jobs newest first, with status and worker, limited by ?limit', async () => {
    const ids: string[] = []
    for (let i = 0; i < 3; i++) ids.push((await jobCall(s, 'POST', `/v2/${held}/run`, { input: { i } })).body.id)
    const r = await jobCall(s, 'GET', `/v2/${held}/requests?limit=2`)
    expect(r.status).toBe(200)
    expect(r.body.requests.map((j: { id: string }) => j.id)).toEqual([ids[2], ids[1]])
    expect(r.body.requests[0]).toMatchObject({
      status: 'IN_QUEUE',
      sync: false,
      workerId: null,
      startedAt: null,
      retries: 0,
    })
    expect(Date.parse(r.body.requests[0].createdAt)).not.toBeNaN()
    const all = await jobCall(s, 'GET', `/v2/${held}/requests`)
    expect(all.body.requests).toHaveLength(3)
  })

  it("refuses other accounts' endpoints and a bad limit", async () => {
    const other = await s.accountKey('someone-else')
    expect((await jobCall(s, 'GET', `/v2/${held}/requests`, undefined, { key: other })).status).toBe(404)
    const bad = await jobCall(s, 'GET', `/v2/${held}/requests?limit=0`)
    expect(bad.status).toBe(400)
    expect(bad.body.errors[0]).toMatch(/limit/)
  })
})
