import Fastify from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RawJson } from '../domain/RawJson.js'
import { registerJsonParser } from './jsonParser.js'
import { registerProblemHandling } from './problem.js'

describe('registerJsonParser', () => {
  // The server's limit is every route's own unless the route sets one (Fastify fills routeOptions.bodyLimit).
  const app = Fastify({ logger: false, bodyLimit: 64 })
  /** What the route saw: the parsed body, with a RawJson member shown as its text. */
  const seen = (body: unknown) =>
    body && typeof body === 'object'
      ? Object.fromEntries(Object.entries(body).map(([k, v]) => [k, v instanceof RawJson ? `raw:${v.text}` : v]))
      : (body ?? null)
  beforeAll(async () => {
    registerJsonParser(app, { bodyLimit: 64, maxDepth: 3 })
    registerProblemHandling(app, () => ['POST'])
    app.post('/echo', async (req) => ({ body: seen(req.body) }))
    app.post('/raw', { config: { rawJsonField: 'input' } }, async (req) => ({ body: seen(req.body) }))
    app.post('/big', { bodyLimit: 256 }, async (req) => ({ body: seen(req.body) }))
    await app.ready()
  })
  afterAll(() => app.close())

  const post = (url: string, payload: string, contentType = 'application/json') =>
    app.inject({ method: 'POST', url, payload, headers: { 'content-type': contentType } })

  it('parses a UTF-8 JSON body and treats an empty one as no body', async () => {
    expect((await post('/echo', '{"a":[1,"é"]}')).json()).toEqual({ body: { a: [1, 'é'] } })
    expect((await post('/echo', '', 'application/json; charset=UTF-8')).json()).toEqual({ body: null })
  })

  it('keeps the route’s rawJsonField as the text that came, and parses the rest', async () => {
    expect((await post('/raw', '{"input":{ "x" :1},"n":2}')).json()).toEqual({ body: { input: 'raw:{ "x" :1}', n: 2 } })
  })

  it('answers 415 to a charset other than UTF-8', async () => {
    const charset = await post('/echo', '{}', 'application/json; charset=latin1')
    expect(charset.statusCode).toBe(415)
    expect(charset.json().detail).toMatch(/charset "latin1"/)
  })

  it('answers 400 to prototype keys, too deep nesting and bad UTF-8', async () => {
    const proto = await post('/echo', '{"constructor":{"prototype":{"x":1}}}')
    expect(proto.statusCode).toBe(400)
    expect(proto.json().detail).toMatch(/constructor\.prototype/)
    expect((await post('/echo', '[[[[1]]]]')).statusCode).toBe(400)
    const bad = await app.inject({
      method: 'POST',
      url: '/echo',
      payload: Buffer.from([0x22, 0xff, 0x22]),
      headers: { 'content-type': 'application/json' },
    })
    expect(bad.statusCode).toBe(400)
    expect(bad.json().detail).toMatch(/UTF-8/)
  })

  it('limits a body to its route’s bodyLimit', async () => {
    const long = JSON.stringify({ s: 'x'.repeat(100) })
    expect((await post('/echo', long)).statusCode).toBe(413)
    expect((await post('/big', long)).statusCode).toBe(200)
  })
})
