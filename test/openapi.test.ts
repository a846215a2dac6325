import { Validator } from '@seriousme/openapi-schema-validator'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from './helpers/server.js'

describe('/v2/openapi.json', () => {
  let s: TestServer
  let doc: any
  beforeAll(async () => {
    s = await startTestServer()
    const res = await fetch(`${s.url}/v2/openapi.json`)
    expect(res.status).toBe(200)
    doc = await res.json()
  })
  afterAll(() => s.stop())

  it('is a valid OpenAPI 3.1 document', async () => {
    expect(doc.openapi).toMatch(/^3\.1\./)
    const result = await new Validator().validate(doc)
    expect(result.errors ?? []).toEqual([])
    expect(result.valid).toBe(true)
  })

  it('documents every implemented route with its method', () => {
    const missing = s.hangar.app.hangarRoutes
      .filter((r) => r.url.startsWith('/v2/') && r.url !== '/v2/openapi.json')
      .map((r) => ({
        method: r.method.toLowerCase(),
        path: r.url.replace(/:([A-Za-z]+)/g, '{$1}').replace(/\*$/, '{*}'),
      }))
      .filter((r) => !doc.paths?.[r.path]?.[r.method])
    expect(missing).toEqual([])
    expect(Object.keys(doc.paths)).toContain('/v2/catalog/gpus')
    expect(Object.keys(doc.paths)).toContain('/v2/admin/keys')
  })

  it('declares bearer authentication and the problem shape of errors', () => {
    expect(doc.components.securitySchemes.bearer).toEqual({ type: 'http', scheme: 'bearer' })
    expect(doc.security).toEqual([{ bearer: [] }])
    const problem = doc.paths['/v2/catalog/gpus'].get.responses['4XX'].content['application/problem+json'].schema
    expect(problem.required).toEqual(expect.arrayContaining(['title', 'status', 'detail']))
  })

  it('renders docs for people at /docs without a key', async () => {
    const res = await fetch(`${s.url}/docs`, { redirect: 'follow' })
    expect(res.status).toBe(200)
    expect(await res.text()).toMatch(/swagger/i)
  })
})
