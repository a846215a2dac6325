import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { spawnServe } from './helpers/process.js'

describe('hangar serve as a process', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hangar-serve-'))
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

  it('creates the data dir and admin key, stops on SIGTERM with 0, and keeps accounts and keys across a restart', async () => {
    const first = await spawnServe(join(dataDir, 'data'))
    const keyFile = join(dataDir, 'data', 'admin-key')
    const adminKey = readFileSync(keyFile, 'utf8').trim()
    expect(statSync(keyFile).mode & 0o777).toBe(0o600)
    expect(first.output()).toContain(adminKey) // printed once, on first start
    expect(first.output()).toMatch(/\/docs/)

    const auth = (k: string) => ({ authorization: `Bearer ${k}`, 'content-type': 'application/json' })
    expect((await fetch(`${first.url}/v2/admin/accounts`, { method: 'POST', headers: auth(adminKey), body: JSON.stringify({ name: 'persisted' }) })).status).toBe(201)
    const keyRes = await fetch(`${first.url}/v2/admin/keys`, { method: 'POST', headers: auth(adminKey), body: JSON.stringify({ account: 'persisted', permission: 'READ_ONLY' }) })
    const userKey = ((await keyRes.json()) as { key: string }).key

    first.child.kill('SIGTERM')
    expect(await first.exited).toBe(0)

    const second = await spawnServe(join(dataDir, 'data'))
    try {
      expect(second.output()).not.toContain(adminKey) // not printed again
      expect(second.output()).toContain(keyFile)
      const accounts = await fetch(`${second.url}/v2/admin/accounts`, { headers: auth(adminKey) })
      expect(((await accounts.json()) as { accounts: Array<{ name: string }> }).accounts.map((a) => a.name)).toEqual(['admin', 'persisted'])
      expect((await fetch(`${second.url}/v2/catalog/gpus`, { headers: auth(userKey) })).status).toBe(200)
    } finally {
      second.child.kill('SIGINT')
      expect(await second.exited).toBe(0)
    }
  })

  it('uses HANGAR_ADMIN_API_KEY instead of generating a key', async () => {
    const dir = join(dataDir, 'preset')
    const p = await spawnServe(dir, { HANGAR_ADMIN_API_KEY: 'preset-admin-key-0123456789' })
    try {
      expect((await fetch(`${p.url}/v2/admin/accounts`, { headers: { authorization: 'Bearer preset-admin-key-0123456789' } })).status).toBe(200)
      expect(() => statSync(join(dir, 'admin-key'))).toThrow()
    } finally {
      p.child.kill('SIGTERM')
      await p.exited
    }
  })
})
