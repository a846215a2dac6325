import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from './helpers/server.js'

// R15 (delete, other accounts) and which keys may do what with endpoints.
describe('/v2/serverless ownership and access (R15)', () => {
  let s: TestServer
  let key: string
  let otherKey: string
  beforeAll(async () => {
    s = await startTestServer()
    key = await s.accountKey('owner-co')
    otherKey = await s.accountKey('stranger-co')
  })
  afterAll(() => s.stop())

  const body = {
    name: 'ep',
    type: 'QUEUE',
    scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
    image: 'img:1',
    cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
  }
  async function endpoint(k = key, name = 'ep') {
    const r = await s.api('POST', '/v2/serverless', { ...body, name }, k)
    expect(r.status, JSON.stringify(r.body)).toBe(201)
    // The endpoint as reads show it: the webhook secret is in the create answer alone.
    const { webhookSecret: _secret, ...shown } = r.body
    return shown
  }
  const notFound = (id: string) => ({ title: 'Not Found', status: 404, detail: `endpoint "${id}" was not found` })

  it('deletes with 204 and no body, then answers 404 on every route', async () => {
    const ep = await endpoint()
    const del = await s.api('DELETE', `/v2/serverless/${ep.id}`, undefined, key)
    expect(del.status).toBe(204)
    expect(del.body).toBeUndefined()
    for (const [method, path, b] of [
      ['GET', `/v2/serverless/${ep.id}`],
      ['PATCH', `/v2/serverless/${ep.id}`, { name: 'x' }],
      ['DELETE', `/v2/serverless/${ep.id}`],
      ['GET', `/v2/serverless/${ep.id}/releases`],
    ] as const) {
      const r = await s.api(method, path, b, key)
      expect(r.status, `${method} ${path}`).toBe(404)
      expect(r.body).toEqual(notFound(ep.id))
    }
    expect(
      (await s.api('GET', '/v2/serverless', undefined, key)).body.endpoints.map((e: { id: string }) => e.id),
    ).not.toContain(ep.id)
  })

  it('deletes the releases with the endpoint', async () => {
    const ep = await endpoint()
    await s.api('PATCH', `/v2/serverless/${ep.id}`, { image: 'img:2' }, key)
    expect(await s.hangar.store.releases.listByEndpoint(ep.id)).toHaveLength(2)
    await s.api('DELETE', `/v2/serverless/${ep.id}`, undefined, key)
    expect(await s.hangar.store.releases.listByEndpoint(ep.id)).toEqual([])
  })

  it("answers 404 for another account's endpoint everywhere, exactly as for a missing one", async () => {
    const ep = await endpoint(key)
    for (const [method, path, b] of [
      ['GET', `/v2/serverless/${ep.id}`],
      ['PATCH', `/v2/serverless/${ep.id}`, { name: 'stolen' }],
      ['DELETE', `/v2/serverless/${ep.id}`],
      ['GET', `/v2/serverless/${ep.id}/releases`],
    ] as const) {
      const r = await s.api(method, path, b, otherKey)
      expect(r.status, `${method} ${path}`).toBe(404)
      expect(r.body).toEqual(notFound(ep.id))
    }
    expect(
      (await s.api('GET', '/v2/serverless', undefined, otherKey)).body.endpoints.map((e: { id: string }) => e.id),
    ).not.toContain(ep.id)
    const mine = await s.api('GET', `/v2/serverless/${ep.id}`, undefined, key)
    expect(mine.body).toMatchObject({ id: ep.id, name: 'ep' })
  })

  it("lists the caller's endpoints, oldest first, under endpoints", async () => {
    const k = await s.accountKey('lister-co')
    const a = await endpoint(k, 'a')
    const b = await endpoint(k, 'b')
    const r = await s.api('GET', '/v2/serverless', undefined, k)
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ endpoints: [a, b] })
  })

  it('lets a READ_ONLY key read but not create, change or delete', async () => {
    const ep = await endpoint()
    const ro = await s.api('POST', '/v2/admin/keys', { account: 'owner-co', permission: 'READ_ONLY' })
    const roKey = ro.body.key as string
    expect((await s.api('GET', `/v2/serverless/${ep.id}`, undefined, roKey)).status).toBe(200)
    expect((await s.api('GET', '/v2/serverless', undefined, roKey)).status).toBe(200)
    for (const [method, path, b] of [
      ['POST', '/v2/serverless', body],
      ['PATCH', `/v2/serverless/${ep.id}`, { name: 'x' }],
      ['DELETE', `/v2/serverless/${ep.id}`],
    ] as const) {
      expect((await s.api(method, path, b, roKey)).status, `${method} ${path}`).toBe(403)
    }
  })

  it('lets a RESTRICTED key read only its endpoints and write nothing', async () => {
    const allowed = await endpoint()
    const hidden = await endpoint()
    const r = await s.api('POST', '/v2/admin/keys', {
      account: 'owner-co',
      permission: 'RESTRICTED',
      endpointIds: [allowed.id],
    })
    expect(r.status).toBe(201)
    const rk = r.body.key as string
    expect((await s.api('GET', `/v2/serverless/${allowed.id}`, undefined, rk)).body).toEqual(allowed)
    expect((await s.api('GET', `/v2/serverless/${allowed.id}/releases`, undefined, rk)).status).toBe(200)
    expect((await s.api('GET', '/v2/serverless', undefined, rk)).body).toEqual({ endpoints: [allowed] })
    const other = await s.api('GET', `/v2/serverless/${hidden.id}`, undefined, rk)
    expect(other.status).toBe(403)
    expect(other.body.detail).toMatch(/restricted to endpoints/)
    for (const [method, path, b] of [
      ['POST', '/v2/serverless', body],
      ['PATCH', `/v2/serverless/${allowed.id}`, { name: 'x' }],
      ['DELETE', `/v2/serverless/${allowed.id}`],
    ] as const) {
      expect((await s.api(method, path, b, rk)).status, `${method} ${path}`).toBe(403)
    }
  })

  it('needs a key (401)', async () => {
    const r = await s.api('GET', '/v2/serverless', undefined, null)
    expect(r.status).toBe(401)
  })
})
