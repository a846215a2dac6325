import pino from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from './helpers/server.js'

describe('problem+json errors', () => {
  let s: TestServer
  beforeAll(async () => {
    s = await startTestServer({ bodyLimit: 4096 })
  })
  afterAll(() => s.stop())

  const send = (method: string, path: string, body: string | undefined, contentType?: string) =>
    fetch(s.url + path, {
      method,
      headers: { authorization: `Bearer ${s.adminKey}`, ...(contentType ? { 'content-type': contentType } : {}) },
      body,
    })

  async function expectProblem(res: Response, status: number) {
    expect(res.status).toBe(status)
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/)
    const body = await res.json()
    expect(body).toMatchObject({ status, title: expect.any(String), detail: expect.any(String) })
    return body
  }

  it('answers 400 for malformed JSON', async () => {
    const body = await expectProblem(await send('POST', '/v2/admin/accounts', '{"name": ', 'application/json'), 400)
    expect(body.detail).toMatch(/malformed JSON/)
  })

  it('treats an empty body labelled JSON as no body, and names refused prototype keys', async () => {
    const r = await send('POST', '/v2/admin/keys/key_nonexistent/revoke', '', 'application/json')
    expect(r.status).toBe(404)
    const proto = await expectProblem(
      await send('POST', '/v2/admin/accounts', '{"name":"x","__proto__":{"admin":true}}', 'application/json'),
      400,
    )
    expect(proto.detail).toMatch(/__proto__/)
  })

  it('answers 422 listing every schema violation of a body, one entry each', async () => {
    const body = await expectProblem(
      await send(
        'POST',
        '/v2/admin/keys',
        JSON.stringify({ permission: 'SOME', bogus: 1, endpointIds: 'x' }),
        'application/json',
      ),
      422,
    )
    expect(body.errors).toEqual(
      expect.arrayContaining([
        "$: additional properties 'bogus' not allowed",
        'account: is required',
        expect.stringMatching(/^permission: must be one of "ALL", "READ_ONLY", "RESTRICTED", got "SOME"$/),
        'endpointIds: must be array, got string',
      ]),
    )
    expect(body.errors).toHaveLength(4)
  })

  it('answers 422 for wrong query parameter types, naming the parameter', async () => {
    const res = await s.api('GET', '/v2/catalog/gpus?include=AVAILABILITY&product=SERVERLESS&count=lots')
    expect(res.status).toBe(422)
    expect(res.body.errors).toEqual(['query.count: must be integer, got string'])
  })

  it('answers 404 for an unknown route and 405 with Allow for a wrong method', async () => {
    await expectProblem(await send('GET', '/v2/nothing-here', undefined), 404)
    const res = await send('PUT', '/v2/admin/accounts', '{}', 'application/json')
    const body = await expectProblem(res, 405)
    expect(res.headers.get('allow')).toBe('GET, POST')
    expect(body.detail).toMatch(/PUT/)
  })

  it('answers 415 for a body that is not JSON', async () => {
    const body = await expectProblem(await send('POST', '/v2/admin/accounts', 'name=x', 'text/plain'), 415)
    expect(body.detail).toMatch(/application\/json/)
  })

  it('answers 413 for an oversized body', async () => {
    const big = JSON.stringify({ name: 'x'.repeat(10_000) })
    const body = await expectProblem(await send('POST', '/v2/admin/accounts', big, 'application/json'), 413)
    expect(body.detail).toMatch(/larger than/)
  })

  it('answers 404 problems for unknown catalog ids', async () => {
    const r = await s.api('GET', '/v2/catalog/gpus/NVIDIA%20Nonexistent')
    expect(r.status).toBe(404)
    expect(r.body.detail).toBe('GPU type "NVIDIA Nonexistent" was not found')
  })
})

describe('internal errors', () => {
  it('answers 500 with only a request id, never the message or stack', async () => {
    const lines: string[] = []
    const logger = pino({ level: 'error' }, { write: (l: string) => lines.push(l) })
    const s = await startTestServer(
      {},
      {
        logger,
        configureApp: (app) => {
          app.get('/v2/boom', async () => {
            throw new Error('secret internal detail /etc/passwd')
          })
        },
      },
    )
    try {
      const res = await fetch(`${s.url}/v2/boom`, {
        headers: { authorization: `Bearer ${s.adminKey}`, 'x-request-id': 'req-42' },
      })
      expect(res.status).toBe(500)
      const text = await res.text()
      expect(text).not.toMatch(/secret|passwd|at .*\.ts/)
      expect(JSON.parse(text)).toEqual({
        title: 'Internal Server Error',
        status: 500,
        detail: expect.stringContaining('req-42'),
      })
      expect(lines.join('')).toContain('secret internal detail')
    } finally {
      await s.stop()
    }
  })
})
