import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { IncomingMessage } from 'node:http'
import { DomainError } from '../domain/errors.js'
import { charsetOf, decodeJsonBody, readBody } from './jsonBody.js'
import { JsonSyntaxError } from './jsonScan.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A top-level member of the JSON body kept as RawJson text rather than parsed (job `input`). */
    rawJsonField?: string
  }
}

/** What the JSON parser enforces on every route. */
export interface JsonParserOptions {
  /** Bytes a body may have where its route sets no bodyLimit of its own. */
  bodyLimit: number
  /** Deepest nesting accepted (LimitsConfig.maxJsonDepth). */
  maxDepth: number
}

/**
 * Replaces Fastify's JSON parser with the API's one, for every route: a body is read once into a buffer of the
 * declared size, checked for UTF-8, depth and finite numbers before parsing (see jsonBody). An empty body
 * labelled JSON is no body: clients such as the Python runpod SDK send the header on every request, also on
 * bodyless POSTs (cancel, purge-queue). Keys that could pollute prototypes stay refused. A charset other than
 * UTF-8 and a content type that is not JSON are 415 problems; a route's `rawJsonField` stays RawJson text.
 *
 * @example registerJsonParser(app, { bodyLimit: 1_048_576, maxDepth: 64 })
 */
export function registerJsonParser(app: FastifyInstance, o: JsonParserOptions): void {
  const secure = app.getDefaultJsonParser('error', 'error')
  const parse = (text: string): unknown => {
    let failed = false
    let value: unknown
    secure(undefined as never, text, (err, parsed) => {
      failed = err !== null && err !== undefined
      value = parsed
    })
    // The text was validated already: the secure parser refuses it only for a prototype key.
    if (failed) throw new JsonSyntaxError('JSON keys "__proto__" and "constructor.prototype" are not accepted')
    return value
  }
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', async (req: FastifyRequest, payload: IncomingMessage) => {
    const type = req.headers['content-type'] ?? ''
    const charset = charsetOf(type)
    if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8')
      throw new DomainError(
        'unsupported_media_type',
        `unsupported charset ${JSON.stringify(charset)}: JSON bodies must be UTF-8`,
      )
    const buf = await readBody(payload, req.headers, req.routeOptions.bodyLimit ?? o.bodyLimit)
    const body = decodeJsonBody(buf, { maxDepth: o.maxDepth, rawField: req.routeOptions.config.rawJsonField, parse })
    if (body !== undefined && !/^\s*application\/json\s*(;|$)/i.test(type))
      throw new DomainError(
        'unsupported_media_type',
        `unsupported content type ${JSON.stringify(type)}: send application/json`,
      )
    return body
  })
}
