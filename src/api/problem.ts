import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { STATUS_CODES } from 'node:http'
import type { Problem } from '../contract/problem.js'
import { DomainError, type ErrorKind } from '../domain/errors.js'
import { formatValidationErrors } from './validation.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Status of a request that breaks its schema: 422 on the management API; the spec's job operations
     * list only 400 ("check request format") for that.
     */
    validationStatus?: 400 | 422
  }
}

const STATUS: Record<ErrorKind, number> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unprocessable: 422,
  too_many_requests: 429,
  internal: 500,
  bad_gateway: 502,
  unavailable: 503,
  gateway_timeout: 504,
}

/** The HTTP status of a kind of error (for an answer that is not a problem, e.g. the audit of a redirect). */
export function statusOfKind(kind: ErrorKind): number {
  return STATUS[kind]
}

/**
 * The challenge every 401 carries (RFC 9110 §11.6.1): API keys, worker keys and the metrics token are all
 * sent as `Authorization: Bearer <key>` (RFC 6750).
 */
export const BEARER_CHALLENGE = 'Bearer realm="hangar"'

/** Sends an RFC 9457 problem. */
export function sendProblem(
  reply: FastifyReply,
  status: number,
  detail: string,
  errors?: string[],
  extensions?: Partial<Problem>,
): FastifyReply {
  const body: Problem = { title: STATUS_CODES[status] ?? 'Error', status, detail, ...extensions }
  if (errors?.length) body.errors = errors
  if (status === 401) reply.header('www-authenticate', BEARER_CHALLENGE)
  return reply.code(status).type('application/problem+json').send(body)
}

/**
 * A whole HTTP/1.1 problem answer as text, for the places that write on a raw socket because Node or an
 * upgrade leaves no response object (parser errors, CONNECT, refused WebSocket upgrades). It closes the
 * connection: what follows on it cannot be trusted to start a request.
 */
export function rawProblem(status: number, detail: string, headers: Record<string, string> = {}): string {
  const body = JSON.stringify({ title: STATUS_CODES[status] ?? 'Error', status, detail } satisfies Problem)
  const extra = { ...(status === 401 ? { 'www-authenticate': BEARER_CHALLENGE } : {}), ...headers }
  const lines = Object.entries(extra)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')
  return `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\ncontent-type: application/problem+json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n${lines}\r\n${body}`
}

/** Maps every error to `application/problem+json` in one place; a 500 says only the request id. */
export function registerProblemHandling(app: FastifyInstance, methodsFor: (url: string) => string[]): void {
  app.setErrorHandler((err: FastifyError | DomainError | Error, req: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof DomainError) {
      if (err.headers) reply.headers(err.headers)
      return sendProblem(reply, STATUS[err.kind], err.detail, err.errors, err.extensions)
    }
    const fe = err as FastifyError
    if (fe.validation) {
      const errors = formatValidationErrors(fe.validation as never, fe.validationContext)
      return sendProblem(
        reply,
        req.routeOptions.config.validationStatus ?? 422,
        errors.length === 1 ? errors[0] : `${errors.length} validation failures, listed in errors`,
        errors,
      )
    }
    switch (fe.code) {
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
        return sendProblem(reply, 400, `malformed JSON body: ${fe.message}`)
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return sendProblem(reply, 413, `request body is larger than the ${reqLimit(req)} limit`)
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return sendProblem(
          reply,
          415,
          `unsupported content type ${JSON.stringify(req.headers['content-type'] ?? '')}: send application/json`,
        )
    }
    if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) {
      if (err instanceof SyntaxError) return sendProblem(reply, 400, `malformed JSON body: ${err.message}`)
      return sendProblem(reply, fe.statusCode, fe.message)
    }
    req.log.error({ err, reqId: req.id }, 'unhandled error')
    return sendProblem(reply, 500, `internal error; the server log has the details under request id ${req.id}`)
  })

  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0]
    const allowed = methodsFor(path)
    if (allowed.length > 0) {
      reply.header('allow', allowed.join(', '))
      return sendProblem(reply, 405, `method ${req.method} is not allowed on ${path}; allowed: ${allowed.join(', ')}`)
    }
    return sendProblem(reply, 404, `no route ${req.method} ${path}`)
  })
}

function reqLimit(req: FastifyRequest): string {
  const limit = req.routeOptions.bodyLimit
  return limit ? `${limit}-byte` : 'configured'
}
