import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from './helpers/server.js'

const ED25519 = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGk6f2Q0b2xkZXIta2V5LWZvci10ZXN0cw me@laptop'
const ECDSA = 'ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTY='
const SK = 'sk-ssh-ed25519@openssh.com AAAAGnNrLXNzaC1lZDI1NTE5QG9wZW5zc2guY29t yubikey\tsecond word'

describe('account SSH keys', () => {
  let s: TestServer
  let alice: string
  let bob: string
  beforeAll(async () => {
    s = await startTestServer()
    alice = await s.accountKey('ssh-alice')
    bob = await s.accountKey('ssh-bob')
  })
  afterAll(() => s.stop())

  it('starts with no keys', async () => {
    const r = await s.api('GET', '/v2/account/ssh-keys', undefined, alice)
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ keys: [] })
  })

  it('replaces the whole list with PUT, per account', async () => {
    const put = await s.api('PUT', '/v2/account/ssh-keys', { keys: [ED25519, ECDSA] }, alice)
    expect(put.status).toBe(200)
    expect(put.body).toEqual({ keys: [ED25519, ECDSA] })
    expect((await s.api('GET', '/v2/account/ssh-keys', undefined, alice)).body).toEqual({ keys: [ED25519, ECDSA] })
    expect((await s.api('GET', '/v2/account/ssh-keys', undefined, bob)).body).toEqual({ keys: [] })

    const replaced = await s.api('PUT', '/v2/account/ssh-keys', { keys: [SK, SK] }, alice)
    expect(replaced.body).toEqual({ keys: [SK] })
    expect((await s.api('GET', '/v2/account/ssh-keys', undefined, alice)).body).toEqual({ keys: [SK] })

    expect((await s.api('PUT', '/v2/account/ssh-keys', { keys: [] }, alice)).body).toEqual({ keys: [] })
    expect((await s.api('GET', '/v2/account/ssh-keys', undefined, alice)).body).toEqual({ keys: [] })
  })

  it.each([['not-a-key'], ['ssh-rsa'], ['rsa-sha2 AAAA'], ['ssh-rsa AAAA\nssh-ed25519 BBBB']])(
    'rejects %j with 422 naming the item',
    async (bad) => {
      const r = await s.api('PUT', '/v2/account/ssh-keys', { keys: [ED25519, bad] }, alice)
      expect(r.status).toBe(422)
      expect(r.body.errors).toEqual([
        `keys[1]: must match ^(ssh|ecdsa|sk)-\\S+ \\S+([ \\t][^\\n\\r]*)?$, got ${JSON.stringify(bad)}`,
      ])
    },
  )

  it('rejects unknown keys and a missing list with 422', async () => {
    const extra = await s.api('PUT', '/v2/account/ssh-keys', { keys: [], replace: true }, alice)
    expect(extra.status).toBe(422)
    expect(extra.body.errors).toEqual(["$: additional properties 'replace' not allowed"])
    const missing = await s.api('PUT', '/v2/account/ssh-keys', {}, alice)
    expect(missing.body.errors).toEqual(['keys: is required'])
  })

  it('keeps the list unchanged after a rejected PUT', async () => {
    await s.api('PUT', '/v2/account/ssh-keys', { keys: [ED25519] }, alice)
    await s.api('PUT', '/v2/account/ssh-keys', { keys: ['bad'] }, alice)
    expect((await s.api('GET', '/v2/account/ssh-keys', undefined, alice)).body).toEqual({ keys: [ED25519] })
  })

  it('lets a READ_ONLY key read the keys but not replace them', async () => {
    const reader = await s.accountKey('ssh-reader', 'READ_ONLY')
    expect((await s.api('GET', '/v2/account/ssh-keys', undefined, reader)).status).toBe(200)
    expect((await s.api('PUT', '/v2/account/ssh-keys', { keys: [] }, reader)).status).toBe(403)
  })
})
