import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { Problem } from '../contract/problem.js'
import type { LimitsConfig } from './limitsConfig.js'
import { sendProblem } from './problem.js'

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
    if (socket.writable) {
      const body = JSON.stringify({ title: STATUS_CODES[status] ?? 'Error', status, detail } satisfies Problem)
      socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`)
    }
    socket.destroy()
  }
}

/** Errors Fastify's router raises before any route runs (a path it cannot decode, a parameter too long). */
export function frameworkErrorHandler(maxParamLength: number): (err: FastifyError, req: Pick<FastifyRequest, 'id'> & { raw: { url?: string } }, reply: FastifyReply) => void {
  return (err, req, reply) => {
    const path = req.raw.url?.split('?')[0] ?? ''
    if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') return void sendProblem(reply, 414, `a path parameter of ${JSON.stringify(path.slice(0, 200))} is longer than ${maxParamLength} characters`)
    if (err.code === 'FST_ERR_BAD_URL') return void sendProblem(reply, 400, `the path ${JSON.stringify(path.slice(0, 200))} is not valid percent-encoded UTF-8`)
    return void sendProblem(reply, err.statusCode && err.statusCode < 500 ? err.statusCode : 500, err.statusCode && err.statusCode < 500 ? err.message : `internal error; request id ${req.id}`)
  }
}
