import { describe, expect, it } from 'vitest'
import { endToEnd, forwardedHeaders } from './hopByHop.js'

describe('hop-by-hop headers (RFC 9110 §7.6.1)', () => {
  it('drops the fixed hop-by-hop fields and those the Connection header names', () => {
    const h = {
      connection: 'keep-alive, x-trace',
      'keep-alive': 'timeout=5',
      'transfer-encoding': 'chunked',
      te: 'trailers',
      upgrade: 'h2c',
      'x-trace': '1',
      'content-type': 'text/plain',
      'x-app': 'a',
    }
    expect(endToEnd(h)).toEqual({ 'content-type': 'text/plain', 'x-app': 'a' })
  })
  it('drops the fields asked for (the API key)', () => {
    expect(endToEnd({ authorization: 'Bearer k', accept: '*/*' }, ['authorization'])).toEqual({ accept: '*/*' })
  })
  it('appends the client to X-Forwarded-For and names host, scheme and prefix', () => {
    expect(
      forwardedHeaders(
        { 'x-forwarded-for': '10.0.0.1' },
        { ip: '127.0.0.1', host: 'h:80', proto: 'http', prefix: '/lb/e' },
      ),
    ).toEqual({
      'x-forwarded-for': '10.0.0.1, 127.0.0.1',
      'x-forwarded-proto': 'http',
      'x-forwarded-host': 'h:80',
      'x-forwarded-prefix': '/lb/e',
    })
  })
})
