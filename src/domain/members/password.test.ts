import { describe, expect, it } from 'vitest'
import type { DomainError } from '../errors.js'
import { decoyHash, hashPassword, verifyPassword } from './password.js'

describe('password hashing', () => {
  it('verifies the password it hashed, with a salt of its own each time, and nothing else', async () => {
    const a = await hashPassword('correct horse battery staple')
    const b = await hashPassword('correct horse battery staple')
    expect(a).toMatch(/^scrypt\$32768\$8\$1\$[\w-]{22}\$[\w-]{43}$/)
    expect(a).not.toBe(b)
    expect(await verifyPassword('correct horse battery staple', a)).toBe(true)
    expect(await verifyPassword('correct horse battery stapler', a)).toBe(false)
    expect(await verifyPassword('anything', 'md5$abc')).toBe(false)
    expect(await verifyPassword('anything', await decoyHash())).toBe(false)
  })

  it('refuses with 429 what would wait beyond 64 behind the 4 hashes running, and serves the rest', async () => {
    // A cheap stored hash (N=16): the limit is on how many wait, not on how long a hash takes.
    const cheap = 'scrypt$16$1$1$c2FsdHNhbHRzYWx0c2FsdA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'
    const results = await Promise.allSettled(Array.from({ length: 100 }, () => verifyPassword('x', cheap)))
    const refused = results.filter((r) => r.status === 'rejected')
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(68)
    expect(refused).toHaveLength(32)
    const reason = (refused[0] as PromiseRejectedResult).reason as DomainError
    expect(reason.kind).toBe('too_many_requests')
    expect(reason.headers).toEqual({ 'retry-after': '1' })
    // Nothing is left held: a later verification runs.
    expect(await verifyPassword('x', cheap)).toBe(false)
  })
})
