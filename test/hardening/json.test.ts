import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createEndpoint, endpointBody } from '../helpers/endpoints.js'
import { rawRequest } from '../helpers/raw.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

describe('JSON bodies are parsed strictly and the same way on every route', () => {
  let s: TestServer
  let ep: string
  beforeAll(async () => {
    s = await startTestServer()
    ep = (await createEndpoint(s, endpointBody('hangar/echo:latest', { workers: { min: 0, max: 0, idleTimeout: 60 } })))
      .id
  })
  afterAll(() => s.stop())

  const send = async (
    method: string,
    path: string,
    body: string | Buffer,
    contentType: string | null = 'application/json',
  ) => {
    const res = await fetch(s.url + path, {
      method,
      headers: {
        authorization: `Bearer ${s.adminKey}`,
        ...(contentType !== null ? { 'content-type': contentType } : {}),
      },
      body: typeof body === 'string' ? body : new Uint8Array(body),
    })
    const text = await res.text()
    return {
      status: res.status,
      type: res.headers.get('content-type') ?? '',
      body: text ? JSON.parse(text) : undefined,
    }
  }
  const nested = (levels: number) => '['.repeat(levels) + ']'.repeat(levels)

  it('refuses JSON nested deeper than the limit with a 400 problem naming it, on every JSON route', async () => {
    const deep = nested(5_000)
    for (const [method, path, body] of [
      ['POST', `/v2/${ep}/run`, `{"input":{"d":${deep}}}`],
      ['POST', `/v2/${ep}/runsync`, `{"input":{"d":${deep}}}`],
      ['POST', '/v2/serverless', `{"name":${deep}}`],
      ['PATCH', `/v2/serverless/${ep}`, `{"env":{"a":${deep}}}`],
      ['POST', '/v2/admin/accounts', deep],
    ] as const) {
      const r = await send(method, path, body)
      expect(r.status, `${method} ${path}`).toBe(400)
      expect(r.type).toMatch(/^application\/problem\+json/)
      expect(r.body.detail).toMatch(/nested deeper than 128/)
    }
    // At the limit it is only data.
    const ok = await send('POST', `/v2/${ep}/run`, `{"input":{"d":${nested(120)}}}`)
    expect(ok.status).toBe(200)
  })

  it('refuses numbers that are not finite', async () => {
    const r = await send('POST', `/v2/${ep}/run`, '{"input":{"a":1e999999}}')
    expect(r.status).toBe(400)
    expect(r.body.detail).toMatch(/1e999999.*finite/)
    const m = await send(
      'POST',
      '/v2/serverless',
      JSON.stringify(endpointBody()).replace('"idleTimeout":60', '"idleTimeout":-1E400'),
    )
    expect(m.status).toBe(400)
    expect(m.body.detail).toMatch(/finite/)
  })

  it('answers 415 to a charset other than UTF-8 and to an empty content type', async () => {
    const body = JSON.stringify({ input: { a: 1 } })
    for (const ct of ['application/json; charset=utf-16', 'application/json;charset="latin1"', '']) {
      const r = await send('POST', `/v2/${ep}/run`, body, ct)
      expect(r.status, ct).toBe(415)
      expect(r.type).toMatch(/^application\/problem\+json/)
    }
    expect((await send('POST', `/v2/${ep}/run`, body, 'application/json; charset=UTF-8')).status).toBe(200)
    expect((await send('POST', `/v2/${ep}/run`, body, 'application/json; charset=utf8')).status).toBe(200)
    // A body with no Content-Type header at all.
    const none = await rawRequest(
      s.url,
      `POST /v2/${ep}/run HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.adminKey}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    )
    expect(none.status).toBe(415)
    expect(none.headers['content-type']).toMatch(/^application\/problem\+json/)
  })

  it('ignores a UTF-8 byte-order mark the same way on every route', async () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf])
    const run = await send('POST', `/v2/${ep}/run`, Buffer.concat([bom, Buffer.from('{"input":{"a":1}}')]))
    expect(run.status).toBe(200)
    const patch = await send('PATCH', `/v2/serverless/${ep}`, Buffer.concat([bom, Buffer.from('{"name":"renamed"}')]))
    expect(patch.status).toBe(200)
    const account = await send('POST', '/v2/admin/accounts', Buffer.concat([bom, Buffer.from('{"name":"bom"}')]))
    expect(account.status).toBe(201)
  })

  it('refuses a body that is not valid UTF-8', async () => {
    const r = await send(
      'POST',
      `/v2/${ep}/run`,
      Buffer.concat([Buffer.from('{"input":{"a":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}}')]),
    )
    expect(r.status).toBe(400)
    expect(r.body.detail).toMatch(/UTF-8/)
  })

  it('still answers malformed JSON and prototype keys with 400 problems', async () => {
    expect((await send('POST', `/v2/${ep}/run`, '{"input":{"a":1}')).status).toBe(400)
    expect((await send('POST', `/v2/${ep}/run`, '{"input":{"a":1}} x')).status).toBe(400)
    expect((await send('POST', '/v2/admin/accounts', '{"name":"p","__proto__":{"x":1}}')).body.detail).toMatch(
      /__proto__/,
    )
    expect((await send('POST', `/v2/${ep}/run`, '{"input":{"a":1},"__proto__":{"x":1}}')).body.detail).toMatch(
      /__proto__/,
    )
  })
})
