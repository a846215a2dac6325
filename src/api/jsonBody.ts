import { isUtf8 } from 'node:buffer'
import type { IncomingHttpHeaders } from 'node:http'
import type { Readable } from 'node:stream'
import { DomainError } from '../domain/errors.js'
import { RawJson } from '../domain/RawJson.js'
import { JsonSyntaxError, scanJson, type JsonMember, type JsonSpan } from './jsonScan.js'

/** How a JSON body is turned into a value. */
export interface JsonBodyOptions {
  /** Deepest nesting accepted (LimitsConfig.maxJsonDepth). */
  maxDepth: number
  /** A top-level member kept as RawJson text instead of parsed (job `input`, a worker's `output`). */
  rawField?: string
  /** Keep `rawField` raw whatever its JSON type (a result); by default only an object is (an input). */
  rawAnyType?: boolean
  /** Parses a validated JSON text (the prototype-safe parser on the API). */
  parse: (text: string) => unknown
}

/**
 * Reads a request body into one buffer: allocated once at the declared Content-Length (no chunk list and
 * concatenation, which held the body twice), or gathered up to `limit` when chunked.
 */
export function readBody(
  payload: Readable & { headers?: IncomingHttpHeaders },
  headers: IncomingHttpHeaders,
  limit: number,
): Promise<Buffer> {
  const declared = headers['content-length'] === undefined ? NaN : Number(headers['content-length'])
  if (declared > limit) return Promise.reject(tooLarge(limit))
  return new Promise((resolve, reject) => {
    const whole = Number.isFinite(declared) ? Buffer.allocUnsafe(declared) : null
    const chunks: Buffer[] = []
    let received = 0
    const done = (err: Error | null, body?: Buffer) => {
      payload.removeListener('data', onData)
      payload.removeListener('end', onEnd)
      payload.removeListener('error', onError)
      payload.removeListener('aborted', onAborted)
      if (err) reject(err)
      else resolve(body!)
    }
    const onData = (chunk: Buffer) => {
      if (received + chunk.length > (whole ? whole.length : limit))
        return done(
          whole ? new DomainError('bad_request', 'the body is longer than its Content-Length') : tooLarge(limit),
        )
      if (whole) chunk.copy(whole, received)
      else chunks.push(chunk)
      received += chunk.length
    }
    const onEnd = () => {
      if (whole && received !== whole.length)
        return done(
          new DomainError(
            'bad_request',
            `the body ended after ${received} of the ${whole.length} bytes its Content-Length declares`,
          ),
        )
      done(null, whole ?? (chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received)))
    }
    const onError = (err: Error) => done(err)
    const onAborted = () =>
      done(new DomainError('bad_request', 'the client closed the connection before the body ended'))
    payload.on('data', onData)
    payload.once('end', onEnd)
    payload.once('error', onError)
    payload.once('aborted', onAborted)
    payload.resume()
  })
}

/**
 * Decodes a JSON body strictly and the same way on every route: a leading UTF-8 byte-order mark is ignored
 * (RFC 8259 allows a parser to), bytes must be UTF-8, nesting is bounded, numbers must be finite. Returns
 * undefined for an empty body. With `rawField`, that member of a top-level object stays RawJson text.
 */
export function decodeJsonBody(buf: Buffer, o: JsonBodyOptions): unknown {
  const body = utf8Body(buf)
  if (body === undefined) return undefined
  const members: JsonMember[] | undefined = o.rawField ? [] : undefined
  scanJson(body, o.maxDepth, members)
  if (!members || body[firstByte(body)] !== 0x7b) return o.parse(body.toString('utf8'))
  const out: Record<string, unknown> = {}
  for (const m of members) setMember(out, body, m, o)
  return out
}

/**
 * decodeJsonBody for a batch: a top-level array whose object elements each keep their `rawField` member as
 * RawJson (`rawAnyType` as there), the rest of each object parsed. Elements that are not objects, and a
 * top-level value that is not an array, come back parsed as they are, for the caller to refuse in its own
 * words. Returns undefined for an empty body.
 */
export function decodeJsonArrayBody(buf: Buffer, o: JsonBodyOptions & { rawField: string }): unknown {
  const body = utf8Body(buf)
  if (body === undefined) return undefined
  const members: JsonMember[] = []
  const elements: JsonSpan[] = []
  scanJson(body, o.maxDepth, members, elements)
  if (body[firstByte(body)] !== 0x5b) return o.parse(body.toString('utf8'))
  const out: unknown[] = new Array(elements.length)
  // Members come in text order, so each element's members follow those of the element before.
  let k = 0
  for (let e = 0; e < elements.length; e++) {
    const span = elements[e]
    if (body[span.start] !== 0x7b) {
      out[e] = o.parse(body.toString('utf8', span.start, span.end))
      continue
    }
    const obj: Record<string, unknown> = {}
    for (; k < members.length && members[k].element === e; k++) setMember(obj, body, members[k], o)
    out[e] = obj
  }
  return out
}

/** The body without a leading byte-order mark, checked to be UTF-8; undefined when blank. */
function utf8Body(buf: Buffer): Buffer | undefined {
  const body = buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf ? buf.subarray(3) : buf
  if (isBlank(body)) return undefined
  if (!isUtf8(body)) throw new JsonSyntaxError('the body is not valid UTF-8: JSON must be sent as UTF-8')
  return body
}

/** Sets member `m` on `out`: `rawField` as RawJson (see JsonBodyOptions), any other parsed. */
function setMember(out: Record<string, unknown>, body: Buffer, m: JsonMember, o: JsonBodyOptions): void {
  if (m.key === '__proto__')
    throw new JsonSyntaxError('JSON keys "__proto__" and "constructor.prototype" are not accepted')
  out[m.key] =
    m.key === o.rawField
      ? o.rawAnyType
        ? new RawJson(body.subarray(m.start, m.end))
        : raw(body, m)
      : o.parse(body.toString('utf8', m.start, m.end))
}

/**
 * The raw member as RawJson when it is an object; otherwise a stand-in of the same JSON type, so schema
 * validation reports the wrong type as it would for the parsed value.
 */
function raw(body: Buffer, m: JsonMember): unknown {
  switch (body[m.start]) {
    case 0x7b:
      // The bytes as they came (a view into the body, no copy): stored and handed to the worker as they are.
      return new RawJson(body.subarray(m.start, m.end))
    case 0x5b:
      return []
    case 0x22:
      return ''
    case 0x74:
      return true
    case 0x66:
      return false
    case 0x6e:
      return null
    default:
      return 0
  }
}

function isBlank(b: Buffer): boolean {
  return firstByte(b) === b.length
}

function firstByte(b: Buffer): number {
  let i = 0
  while (i < b.length && (b[i] === 0x20 || b[i] === 0x0a || b[i] === 0x0d || b[i] === 0x09)) i++
  return i
}

function tooLarge(limit: number): DomainError {
  return new DomainError('payload_too_large', `request body is larger than the ${limit}-byte limit`)
}

/**
 * The charset a Content-Type names, lower-cased, or undefined when it names none. JSON is UTF-8 (RFC 8259);
 * any other charset is refused rather than decoded wrongly.
 */
export function charsetOf(contentType: string): string | undefined {
  const m = /;\s*charset\s*=\s*"?([^";\s]*)"?/i.exec(contentType)
  return m ? m[1].toLowerCase() : undefined
}
