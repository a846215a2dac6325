import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import type { LimitsConfig } from './limitsConfig.js'
import { rawProblem, sendProblem } from './problem.js'

/** Words for the HTTP parser's refusals (llhttp error codes), so a malformed request learns what was wrong. */
const PARSER_ERRORS: Record<string, string> = {
  HPE_INVALID_CONTENT_LENGTH: 'Content-Length is not a non-negative integer',
  HPE_UNEXPECTED_CONTENT_LENGTH: 'Content-Length and Transfer-Encoding: chunked may not be sent together',
  HPE_INVALID_TRANSFER_ENCODING: 'Transfer-Encoding is not valid',
  HPE_INVALID_CHUNK_SIZE: 'a chunk size of the chunked body is not valid',
  HPE_INVALID_METHOD: 'the request method is not valid',
  HPE_INVALID_URL: 'the request target is not valid',
  HPE_INVALID_VERSION: 'the HTTP version is not valid',
  HPE_INVALID_HEADER_TOKEN: 'a header name is not valid',
  HPE_INVALID_CONSTANT: 'the request line is not valid HTTP',
  HPE_LF_EXPECTED: 'a line does not end with CRLF',
  HPE_CR_EXPECTED: 'a line does not end with CRLF',
}

/**
 * Node answers requests it cannot parse, too-large headers and requests that arrive too slowly itself,
 * before Fastify sees them (the server's `clientError` event). This writes those answers as problems too.
 */
export function clientErrorHandler(limits: LimitsConfig): (err: { code?: string }, socket: Socket) => void {
  return (err, socket) => {
    // A connection the client reset has nobody to answer.
    if (err.code === 'ECONNRESET' || socket.destroyed) return
    let status = 400
    let detail = `malformed HTTP request: ${PARSER_ERRORS[err.code ?? ''] ?? err.code ?? 'not HTTP/1.1'}`
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      status = 408
      detail = `the request did not arrive in time: headers are due within ${limits.headersTimeoutMs} ms and the whole request within ${limits.requestTimeoutMs} ms`
    } else if (err.code === 'HPE_HEADER_OVERFLOW') {
      status = 431
      detail = 'the request headers are larger than the 16 KiB limit'
    }
    if (socket.writable) socket.write(rawProblem(status, detail))
    socket.destroy()
  }
}

/** Errors Fastify's router raises before any route runs (a path it cannot decode, a parameter too long). */
export function frameworkErrorHandler(
  maxParamLength: number,
): (err: FastifyError, req: Pick<FastifyRequest, 'id'> & { raw: { url?: string } }, reply: FastifyReply) => void {
  return (err, req, reply) => {
    const path = req.raw.url?.split('?')[0] ?? ''
    if (err.code === 'FST_ERR_MAX_PARAM_LENGTH')
      return void sendProblem(
        reply,
        414,
        `a path parameter of ${JSON.stringify(path.slice(0, 200))} is longer than ${maxParamLength} characters`,
      )
    if (err.code === 'FST_ERR_BAD_URL')
      return void sendProblem(
        reply,
        400,
        `the path ${JSON.stringify(path.slice(0, 200))} is not valid percent-encoded UTF-8`,
      )
    return void sendProblem(
      reply,
      err.statusCode && err.statusCode < 500 ? err.statusCode : 500,
      err.statusCode && err.statusCode < 500 ? err.message : `internal error; request id ${req.id}`,
    )
  }
}

/**
 * Requests Node answers itself (an empty 417 for an Expect it does not know) or drops without a word
 * (CONNECT, which it hands only to a `connect` listener): answered as problems here. Hangar is no forward
 * proxy, so CONNECT is 501 for every target.
 */
export function registerRawRequestAnswers(server: Server): void {
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => {})
    if (socket.writable)
      socket.end(
        rawProblem(
          501,
          `method CONNECT is not supported: this server is not a proxy (target ${JSON.stringify(String(req.url ?? '').slice(0, 200))})`,
        ),
      )
    else socket.destroy()
  })
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    // The body that may follow was not asked for: the connection closes after the answer.
    const body = JSON.stringify({
      title: 'Expectation Failed',
      status: 417,
      detail: `Expect: ${JSON.stringify(String(req.headers.expect).slice(0, 200))} cannot be met; the only expectation this server knows is 100-continue`,
    })
    res.writeHead(417, {
      'content-type': 'application/problem+json',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
    })
    res.end(body)
  })
}

/**
 * An HTTP/1.1 request without Host is malformed (RFC 9112 §3.2). Node would answer it 400 with an empty
 * body before any route ran (its `requireHostHeader`, turned off in app.ts): this says so as a problem, first
 * of all request hooks, and closes the connection as Node did.
 */
export function registerHostRequired(app: FastifyInstance): void {
  app.addHook('onRequest', (req, reply, done) => {
    if (req.headers.host !== undefined || req.raw.httpVersion !== '1.1') return done()
    reply.header('connection', 'close')
    sendProblem(reply, 400, 'an HTTP/1.1 request must carry a Host header (RFC 9112 §3.2)')
  })
}
