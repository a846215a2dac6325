import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto'
import { DomainError } from '../errors.js'

/**
 * Passwords are hashed with scrypt (RFC 7914) from node:crypto: memory-hard, so guessing on GPUs costs
 * memory as well as time; a salt of 16 random bytes per password; verified with timingSafeEqual. It is
 * OpenSSL's implementation, kept with Node itself, and adds no dependency. The parameters are stored with
 * each hash, so raising them later leaves older hashes verifiable.
 */
const PARAMS = { N: 2 ** 15, r: 8, p: 1 }
const KEY_LENGTH = 32
/** Longest password accepted: scrypt reads it whole, and a megabyte of it would be a cheap way to load us. */
export const MAX_PASSWORD_LENGTH = 1024
export const MIN_PASSWORD_LENGTH = 12

/**
 * Hashes run at most this many at once (each holds 32 MiB and a thread of libuv's pool), and at most
 * MAX_WAITING wait: a flood of sign-ins is answered 429 instead of exhausting memory or starving the pool that
 * file and DNS calls share.
 */
const MAX_RUNNING = 4
const MAX_WAITING = 64
let running = 0
const waiting: Array<() => void> = []

async function withSlot<T>(fn: () => Promise<T>): Promise<T> {
  if (running < MAX_RUNNING) running++
  else {
    if (waiting.length >= MAX_WAITING)
      throw new DomainError('too_many_requests', 'too many sign-ins at once: try again in a moment', undefined, {
        'retry-after': '1',
      })
    // The slot is handed over by the one that ends (running stays counted).
    await new Promise<void>((resolve) => waiting.push(resolve))
  }
  try {
    return await fn()
  } finally {
    const next = waiting.shift()
    if (next) next()
    else running--
  }
}

function derive(password: string, salt: Buffer, params: { N: number; r: number; p: number }): Promise<Buffer> {
  const opts: ScryptOptions = { ...params, maxmem: 128 * params.N * params.r * 2 }
  return withSlot(
    () =>
      new Promise((resolve, reject) =>
        scrypt(password.normalize('NFC'), salt, KEY_LENGTH, opts, (err, key) => (err ? reject(err) : resolve(key))),
      ),
  )
}

/** `scrypt$N$r$p$salt$hash` (salt and hash base64url). */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16)
  const key = await derive(password, salt, PARAMS)
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join('$')
}

/** Whether `password` matches `stored`; false for a malformed hash. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$')
  if (scheme !== 'scrypt' || !salt || !hash) return false
  const expected = Buffer.from(hash, 'base64url')
  const key = await derive(password, Buffer.from(salt, 'base64url'), { N: Number(n), r: Number(r), p: Number(p) })
  return key.length === expected.length && timingSafeEqual(key, expected)
}

/**
 * A hash of a random password, computed once: sign-ins with an unknown email are checked against it so
 * that they take as long as a wrong password for a known one (timing says nothing about who is a member).
 */
let decoy: Promise<string> | undefined
export function decoyHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(16).toString('hex'))
  return decoy
}
