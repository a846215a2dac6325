import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RETIRED_V1_PATHS } from '../src/domain/v1Retirement.js'
import { startTestServer, type TestServer } from './helpers/server.js'

/** A v1 request per path of the mapping: the method a v1 client used, and the v2 method and path it must use. */
const CASES: Array<[method: string, v1: string, v2: string | null]> = [
  ['GET', '/pods', 'GET /v2/pods'],
  ['POST', '/pods', 'POST /v2/pods'],
  ['GET', '/pods/p1', 'GET /v2/pods/p1'],
  ['DELETE', '/pods/p1', 'DELETE /v2/pods/p1'],
  ['POST', '/pods/p1/update', 'PATCH /v2/pods/p1'],
  ['POST', '/pods/p1/start', 'POST /v2/pods/p1/action'],
  ['POST', '/pods/p1/stop', 'POST /v2/pods/p1/action'],
  ['POST', '/pods/p1/restart', 'POST /v2/pods/p1/action'],
  ['POST', '/pods/p1/reset', null],
  ['GET', '/endpoints', 'GET /v2/serverless'],
  ['POST', '/endpoints', 'POST /v2/serverless'],
  ['GET', '/endpoints/e1', 'GET /v2/serverless/e1'],
  ['POST', '/endpoints/e1/update', 'PATCH /v2/serverless/e1'],
  ['DELETE', '/endpoints/e1', 'DELETE /v2/serverless/e1'],
  ['GET', '/templates', 'GET /v2/templates'],
  ['POST', '/templates/t1/update', 'PATCH /v2/templates/t1'],
  ['GET', '/templates/t1', 'GET /v2/templates/t1'],
  ['GET', '/networkvolumes', 'GET /v2/network-volumes'],
  ['POST', '/networkvolumes/v1/update', 'PATCH /v2/network-volumes/v1'],
  ['GET', '/networkvolumes/v1', 'GET /v2/network-volumes/v1'],
  ['GET', '/containerregistryauth', 'GET /v2/registries'],
  ['DELETE', '/containerregistryauth/r1', 'DELETE /v2/registries/r1'],
  ['GET', '/billing/pods', 'GET /v2/billing/pods'],
  ['GET', '/billing/endpoints', 'GET /v2/billing/serverless'],
  ['GET', '/billing/networkvolumes', 'GET /v2/billing/network-volumes'],
]

describe('retired v1 paths', () => {
  let s: TestServer
  beforeAll(async () => {
    s = await startTestServer()
  })
  afterAll(() => s.stop())

  it('covers every path of the mapping', () => {
    const covered = new Set(CASES.map(([, v1]) => v1.replace(/^\/(\w+)\/\w+\d(\/|$)/, '/$1/:id$2')))
    const paths = RETIRED_V1_PATHS.map((p) => p.path)
    expect(paths.filter((p) => !covered.has(p) && !CASES.some(([, v1]) => v1 === p))).toEqual([])
  })

  for (const prefix of ['', '/v1']) {
    for (const [method, v1, v2] of CASES) {
      it(`answers ${method} ${prefix}${v1} with 410 naming ${v2 ?? 'no successor'}`, async () => {
        // With a key or without one: a client with an outdated setup learns of the retirement either way.
        const r = await s.api(method, `${prefix}${v1}`, method === 'POST' ? { name: 'x' } : undefined, null)
        expect(r.status).toBe(410)
        expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/)
        expect(r.headers.get('sunset')).toBe('Sun, 15 Nov 2026 00:00:00 GMT')
        expect(r.body.title).toBe('Gone')
        expect(r.body.status).toBe(410)
        if (v2 === null) {
          expect(r.headers.get('link')).toBeNull()
          expect(r.body.detail).toMatch(/no v2 equivalent/)
          return
        }
        const [, path] = v2.split(' ')
        expect(r.body.detail).toContain(`is now ${v2};`)
        expect(r.headers.get('link')).toBe(`<${s.url}${path}>; rel="successor-version"`)
      })
    }
  }

  it('names the shape changes that matter for each path', async () => {
    expect((await s.api('POST', '/v1/endpoints', {})).body.detail).toMatch(/workersMin.*under `workers`/)
    expect((await s.api('GET', '/v1/templates')).body.detail).toMatch(/imageName is `image`.*bare arrays/)
    expect((await s.api('POST', '/v1/networkvolumes', {})).body.detail).toMatch(/`dataCenterId` is `dataCenter`/)
    expect((await s.api('POST', '/pods/abc/stop')).body.detail).toMatch(/\{"action": "stop"\}/)
  })

  it('shadows nothing of v2, the console, metrics or load-balancer paths', async () => {
    expect((await s.api('GET', '/v2/pods')).status).toBe(200)
    expect((await s.api('GET', '/v2/serverless')).status).toBe(200)
    expect((await s.api('GET', '/v2/billing/pods')).status).toBe(200)
    expect((await s.api('GET', '/lb/nope/pods')).status).not.toBe(410)
    expect((await s.api('POST', '/v2/nope/openai/v1/chat/completions', {})).status).not.toBe(410)
    expect((await s.api('GET', '/metrics')).status).not.toBe(410)
    expect((await s.api('GET', '/console/endpoints', undefined, null)).status).not.toBe(410)
    expect((await s.api('GET', '/v1/nothing')).status).toBe(404)
  })

  it('keeps v1 out of the OpenAPI document', async () => {
    const doc = (await s.api('GET', '/v2/openapi.json')).body
    const v1 = Object.keys(doc.paths).filter((p) => !p.startsWith('/v2/'))
    expect(v1).toEqual([])
  })
})
