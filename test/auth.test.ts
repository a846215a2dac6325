import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from './helpers/clock.js'
import { createEndpoint, endpointBody } from './helpers/endpoints.js'
import { startTestServer, type TestServer } from './helpers/server.js'

describe('authentication and permissions', () => {
  let s: TestServer
  beforeAll(async () => {
    s = await startTestServer()
  })
  afterAll(() => s.stop())

  const problem = (status: number, detail: RegExp) => ({
    title: expect.any(String),
    status,
    detail: expect.stringMatching(detail),
  })

  it('answers 401 problem+json for a missing key', async () => {
    const r = await s.api('GET', '/v2/catalog/gpus', undefined, null)
    expect(r.status).toBe(401)
    expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/)
    expect(r.body).toEqual(problem(401, /missing API key/))
  })

  it('names the Bearer scheme in WWW-Authenticate on every 401 (RFC 9110 §11.6.1), and only there', async () => {
    const missing = await s.api('GET', '/v2/catalog/gpus', undefined, null)
    const malformed = await fetch(`${s.url}/v2/catalog/gpus`, { headers: { authorization: 'Basic dXNlcjpwYXNz' } })
    const unknown = await s.api('GET', '/v2/catalog/gpus', undefined, 'hk_thisKeyDoesNotExistAnywhere000')
    const metrics = await fetch(`${s.url}/metrics`)
    for (const r of [missing, malformed, unknown, metrics]) {
      expect(r.status).toBe(401)
      expect(r.headers.get('www-authenticate')).toBe('Bearer realm="hangar"')
    }
    const forbidden = await s.api('GET', '/v2/admin/accounts', undefined, await s.accountKey('challenge-co'))
    expect(forbidden.status).toBe(403)
    expect(forbidden.headers.get('www-authenticate')).toBeNull()
  })

  it('answers 401 for a malformed Authorization header', async () => {
    const res = await fetch(`${s.url}/v2/catalog/gpus`, { headers: { authorization: 'Basic dXNlcjpwYXNz' } })
    expect(res.status).toBe(401)
    expect(await res.json()).toEqual(problem(401, /malformed Authorization header/))
    const short = await s.api('GET', '/v2/catalog/gpus', undefined, 'abc')
    expect(short.body).toEqual(problem(401, /malformed API key/))
  })

  it('answers 401 for an unknown key', async () => {
    const r = await s.api('GET', '/v2/catalog/gpus', undefined, 'hk_thisKeyDoesNotExistAnywhere000')
    expect(r.body).toEqual(problem(401, /unknown API key/))
  })

  it('answers 401 for a revoked key, at once', async () => {
    const key = await s.accountKey('revoked-co')
    expect((await s.api('GET', '/v2/catalog/gpus', undefined, key)).status).toBe(200)
    const keys = await s.api('GET', '/v2/admin/keys?account=revoked-co')
    const id = keys.body.keys[0].id
    expect((await s.api('POST', `/v2/admin/keys/${id}/revoke`, {})).status).toBe(200)
    const r = await s.api('GET', '/v2/catalog/gpus', undefined, key)
    expect(r.body).toEqual(problem(401, /revoked/))
  })

  it('answers 401 for an expired key', async () => {
    const clock = new ManualClock()
    const t = await startTestServer({}, { clock })
    try {
      await t.api('POST', '/v2/admin/accounts', { name: 'expiring-co' })
      const created = await t.api('POST', '/v2/admin/keys', {
        account: 'expiring-co',
        permission: 'ALL',
        expiresAt: new Date(clock.now() + 3_600_000).toISOString(),
      })
      expect(created.status).toBe(201)
      expect((await t.api('GET', '/v2/catalog/gpus', undefined, created.body.key)).status).toBe(200)
      clock.advance(3_600_001)
      const r = await t.api('GET', '/v2/catalog/gpus', undefined, created.body.key)
      expect(r.body).toEqual(problem(401, /expired/))
    } finally {
      await t.stop()
    }
  })

  it('refuses admin routes to non-admin keys with 403', async () => {
    const key = await s.accountKey('plain-co')
    const r = await s.api('GET', '/v2/admin/accounts', undefined, key)
    expect(r.body).toEqual(problem(403, /admin key/))
  })

  it('lets a READ_ONLY key read but not write', async () => {
    const key = await s.accountKey('reader-co', 'READ_ONLY')
    expect((await s.api('GET', '/v2/catalog/cpus', undefined, key)).status).toBe(200)
    const r = await s.api('POST', '/v2/admin/accounts', { name: 'x' }, key)
    expect(r.status).toBe(403)
  })

  it('shows a created key once and stores only its hash', async () => {
    await s.api('POST', '/v2/admin/accounts', { name: 'hash-co' })
    const created = await s.api('POST', '/v2/admin/keys', { account: 'hash-co', permission: 'ALL' })
    expect(created.body.key).toMatch(/^hk_/)
    const listed = await s.api('GET', '/v2/admin/keys?account=hash-co')
    expect(JSON.stringify(listed.body)).not.toContain(created.body.key)
    expect(listed.body.keys[0]).not.toHaveProperty('key')
    expect(listed.body.keys[0]).not.toHaveProperty('hash')
  })

  it('rejects RESTRICTED keys without endpoints, and endpoint lists on other keys', async () => {
    await s.api('POST', '/v2/admin/accounts', { name: 'restrict-co' })
    const r1 = await s.api('POST', '/v2/admin/keys', { account: 'restrict-co', permission: 'RESTRICTED' })
    expect(r1.status).toBe(400)
    expect(r1.body.errors).toEqual(['endpointIds: required with permission RESTRICTED'])
    const r2 = await s.api('POST', '/v2/admin/keys', { account: 'restrict-co', permission: 'ALL', endpointIds: ['e1'] })
    expect(r2.status).toBe(400)
  })

  it('refuses RESTRICTED keys naming endpoints that do not exist or belong to another account, naming each id', async () => {
    const own = await createEndpoint(
      s,
      endpointBody('hangar/echo:latest', { workers: { min: 0, max: 0 } }),
      await s.accountKey('limits-co'),
    )
    const foreign = await createEndpoint(
      s,
      endpointBody('hangar/echo:latest', { workers: { min: 0, max: 0 } }),
      await s.accountKey('other-co'),
    )
    const r = await s.api('POST', '/v2/admin/keys', {
      account: 'limits-co',
      permission: 'RESTRICTED',
      endpointIds: [own.id, 'doesnotexist', foreign.id],
    })
    expect(r.status).toBe(400)
    expect(r.body.errors).toEqual([
      'endpointIds[1]: "doesnotexist" is not an endpoint of account "limits-co"; see /v2/serverless',
      `endpointIds[2]: ${JSON.stringify(foreign.id)} is not an endpoint of account "limits-co"; see /v2/serverless`,
    ])
    const one = await s.api('POST', '/v2/admin/keys', {
      account: 'limits-co',
      permission: 'RESTRICTED',
      endpointIds: ['doesnotexist'],
    })
    expect(one.body.detail).toBe(
      'endpointIds[0]: "doesnotexist" is not an endpoint of account "limits-co"; see /v2/serverless',
    )
    const ok = await s.api('POST', '/v2/admin/keys', {
      account: 'limits-co',
      permission: 'RESTRICTED',
      endpointIds: [own.id],
    })
    expect(ok.status).toBe(201)
  })

  it('lets a RESTRICTED key read the catalog but not admin routes', async () => {
    const ep = await createEndpoint(
      s,
      endpointBody('hangar/echo:latest', { workers: { min: 0, max: 0 } }),
      await s.accountKey('restricted-reader'),
    )
    const key = await s.accountKey('restricted-reader', 'RESTRICTED', [ep.id])
    expect((await s.api('GET', '/v2/catalog/gpus', undefined, key)).status).toBe(200)
    expect((await s.api('GET', '/v2/admin/keys', undefined, key)).status).toBe(403)
  })

  it('refuses a second account with the same name with 409', async () => {
    await s.api('POST', '/v2/admin/accounts', { name: 'twice' })
    const r = await s.api('POST', '/v2/admin/accounts', { name: 'twice' })
    expect(r.status).toBe(409)
  })
})
