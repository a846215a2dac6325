import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createEndpoint, endpointBody } from '../helpers/endpoints.js'
import { openSocket, rawRequest, readAnswer, type RawAnswer } from '../helpers/raw.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

function expectProblem(a: RawAnswer, status: number): { title: string; status: number; detail: string } {
  expect(a.status, a.body).toBe(status)
  expect(a.headers['content-type']).toMatch(/^application\/problem\+json/)
  const body = JSON.parse(a.body)
  expect(body).toMatchObject({ status, title: expect.any(String), detail: expect.any(String) })
  return body
}

describe('every error a client can provoke is a problem', () => {
  let s: TestServer
  let auth: string
  beforeAll(async () => {
    s = await startTestServer()
    auth = `Authorization: Bearer ${s.adminKey}\r\n`
  })
  afterAll(() => s.stop())

  const get = (path: string, extra = '') =>
    rawRequest(s.url, `GET ${path} HTTP/1.1\r\nHost: x\r\n${auth}${extra}Connection: close\r\n\r\n`)

  it('answers bad percent-encoding in a path with a 400 problem', async () => {
    for (const path of ['/v2/serverless/%ZZ', '/v2/serverless/%C0%AF', '/v2/%E0%A4%A/run']) {
      const p = expectProblem(await get(path), 400)
      expect(p.detail).toMatch(/percent-encod/)
    }
  })

  it('answers a path parameter over the length limit with a 414 problem naming the limit', async () => {
    const p = expectProblem(await get(`/v2/serverless/${'a'.repeat(300)}`), 414)
    expect(p.detail).toMatch(/128/)
  })

  it('answers oversized headers with a 431 problem', async () => {
    const p = expectProblem(await get('/v2/serverless', `X-Big: ${'b'.repeat(60_000)}\r\n`), 431)
    expect(p.detail).toMatch(/header/i)
  })

  it('answers a negative Content-Length, and Content-Length with chunked encoding, with 400 problems', async () => {
    const body = '{"name":"x"}'
    expectProblem(
      await rawRequest(
        s.url,
        `POST /v2/admin/accounts HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: -5\r\n\r\n${body}`,
      ),
      400,
    )
    const both = await rawRequest(
      s.url,
      `POST /v2/admin/accounts HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: ${body.length}\r\nTransfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
    )
    expectProblem(both, 400)
    expectProblem(await rawRequest(s.url, `GARBAGE\r\n\r\n`), 400)
  })

  it('answers an HTTP/1.1 request without Host with a 400 problem, and still serves HTTP/1.0 without one', async () => {
    const none = await rawRequest(s.url, `GET /v2/serverless HTTP/1.1\r\n${auth}Connection: close\r\n\r\n`)
    expect(expectProblem(none, 400).detail).toMatch(/Host header/)
    expect(none.headers.connection).toBe('close')
    expect((await rawRequest(s.url, `GET /v2/serverless HTTP/1.0\r\n${auth}\r\n`)).status).toBe(200)
  })

  it('answers an Expect it cannot meet with a 417 problem naming it', async () => {
    const a = await rawRequest(
      s.url,
      `POST /v2/admin/accounts HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 12\r\nExpect: 999-x\r\n\r\n`,
    )
    expect(expectProblem(a, 417).detail).toMatch(/999-x/)
    expect(a.headers.connection).toBe('close')
  })

  it('answers CONNECT with a 501 problem instead of dropping the connection', async () => {
    const a = await rawRequest(s.url, `CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n${auth}\r\n`)
    expect(expectProblem(a, 501).detail).toMatch(/CONNECT.*not a proxy/)
  })
})

describe('slow clients are cut off; long-polls are not', () => {
  let s: TestServer
  beforeAll(async () => {
    s = await startTestServer({ limits: { headersTimeoutMs: 1_000, requestTimeoutMs: 2_000 } })
  })
  afterAll(() => s.stop())

  it('answers a body that stops arriving with a 408 problem once the request deadline passes', async () => {
    const socket = await openSocket(s.url)
    const answer = readAnswer(socket, 30_000)
    socket.write(
      `POST /v2/admin/accounts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.adminKey}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":"sl`,
    )
    const a = await answer
    expect(a).not.toBeNull()
    const p = expectProblem(a!, 408)
    expect(p.detail).toMatch(/2000 ms/)
    socket.destroy()
  })

  it('answers headers that never finish with a 408 problem once the headers deadline passes', async () => {
    const socket = await openSocket(s.url)
    const answer = readAnswer(socket, 30_000)
    socket.write(`GET /v2/serverless HTTP/1.1\r\nHost: x\r\nX-Slow: 1\r\n`)
    const a = await answer
    expect(a).not.toBeNull()
    expectProblem(a!, 408)
    socket.destroy()
  })

  it('still holds a long-poll past the request deadline once the request is in', async () => {
    const ep = await createEndpoint(
      s,
      endpointBody('hangar/echo:latest', { workers: { min: 0, max: 0, idleTimeout: 60 } }),
    )
    const run = await s.api('POST', `/v2/${ep.id}/run`, { input: { n: 1 } })
    expect(run.status).toBe(200)
    const t0 = Date.now()
    const res = await s.api('GET', `/v2/${ep.id}/status-sync/${run.body.id}?wait=4000`)
    expect(res.status).toBe(200)
    expect(res.body.status).toBe('IN_QUEUE')
    expect(Date.now() - t0).toBeGreaterThanOrEqual(3_900)
  })
})
