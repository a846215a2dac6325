import { createHash } from 'node:crypto'
import { DomainError } from '../errors.js'
import { stringifyWithRaw } from '../RawJson.js'

/** The request header of the IETF httpapi draft "The Idempotency-Key HTTP Header Field". */
export const IDEMPOTENCY_HEADER = 'idempotency-key'
/** Longest key accepted (UUIDs and the like are far shorter). */
export const MAX_IDEMPOTENCY_KEY = 255

/**
 * The key of an `Idempotency-Key` header value: the draft makes it a Structured Field string (`"abc"`), and
 * clients often send it bare; both are accepted. Throws a 400 naming the header and the rule otherwise.
 */
export function parseIdempotencyKey(raw: string | string[] | undefined): string | undefined {
  if (raw === undefined) return undefined
  if (Array.isArray(raw)) throw badKey(`sent ${raw.length} times; send it once`)
  let key = raw.trim()
  if (key.startsWith('"')) {
    const m = /^"((?:[^"\\]|\\["\\])*)"$/.exec(key)
    if (!m) throw badKey(`${JSON.stringify(raw)} is not a well-formed quoted string`)
    key = m[1].replace(/\\(["\\])/g, '$1')
  }
  if (key.length === 0) throw badKey('must not be empty')
  if (key.length > MAX_IDEMPOTENCY_KEY)
    throw badKey(`must be at most ${MAX_IDEMPOTENCY_KEY} characters, got ${key.length}`)
  if (!/^[\x20-\x7e]+$/.test(key)) throw badKey('must be printable ASCII')
  return key
}

function badKey(rule: string): DomainError {
  const msg = `Idempotency-Key header: ${rule}`
  return new DomainError('bad_request', msg, [msg])
}

/**
 * What makes two submissions "the same request": the operation and the body as received (the job input
 * as its original text). Two submissions with one key and different fingerprints are a client error.
 */
export function submissionFingerprint(operation: 'run' | 'runsync', body: unknown): string {
  return createHash('sha256').update(operation).update('\n').update(stringifyWithRaw(body)).digest('base64url')
}

/** A key claimed for a job, stored with it (per account and endpoint) until `expiresAt`. */
export interface IdempotencyClaim {
  key: string
  fingerprint: string
  expiresAt: number
}

/** The outcome of submitting under a key: the job went in, or the key already named a job. */
export type IdempotentInsert = { inserted: true } | { inserted: false; jobId: string; fingerprint: string }

/** The 422 of a key reused for another request (`jobId` undefined: that request is still being accepted). */
export function keyReused(key: string, jobId: string | undefined): DomainError {
  const first = jobId === undefined ? 'a request still being accepted' : `job ${JSON.stringify(jobId)}`
  return new DomainError(
    'unprocessable',
    `Idempotency-Key ${JSON.stringify(key)} was used for ${first} with another request body or operation; use a new key for a new request`,
  )
}

/** The 409 of a duplicate arriving while the first submission with its key is still being accepted. */
export function keyInFlight(key: string): DomainError {
  return new DomainError(
    'conflict',
    `a request with Idempotency-Key ${JSON.stringify(key)} is still being accepted; retry shortly to get its job`,
    undefined,
    { 'retry-after': '1' },
  )
}
