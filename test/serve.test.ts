import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { spawnServe } from './helpers/process.js'

// Each case starts whole server processes; on a loaded machine one start can take ten seconds.
describe('hangar serve as a process', { timeout: 120_000 }, () => {
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
    expect(
      (
        await fetch(`${first.url}/v2/admin/accounts`, {
          method: 'POST',
          headers: auth(adminKey),
          body: JSON.stringify({ name: 'persisted' }),
        })
      ).status,
    ).toBe(201)
    const keyRes = await fetch(`${first.url}/v2/admin/keys`, {
      method: 'POST',
      headers: auth(adminKey),
      body: JSON.stringify({ account: 'persisted', permission: 'READ_ONLY' }),
    })
    const userKey = ((await keyRes.json()) as { key: string }).key

    first.child.kill('SIGTERM')
    expect(await first.exited).toBe(0)

    const second = await spawnServe(join(dataDir, 'data'))
    try {
      expect(second.output()).not.toContain(adminKey) // not printed again
      expect(second.output()).toContain(keyFile)
      const accounts = await fetch(`${second.url}/v2/admin/accounts`, { headers: auth(adminKey) })
      expect(((await accounts.json()) as { accounts: Array<{ name: string }> }).accounts.map((a) => a.name)).toEqual([
        'admin',
        'persisted',
      ])
      expect((await fetch(`${second.url}/v2/catalog/gpus`, { headers: auth(userKey) })).status).toBe(200)
    } finally {
      second.child.kill('SIGINT')
      expect(await second.exited).toBe(0)
    }
  })

  it('on SIGTERM answers requests in flight and is not held open by idle or silent connections', async () => {
    const p = await spawnServe(join(dataDir, 'drain'))
    const adminKey = readFileSync(join(dataDir, 'drain', 'admin-key'), 'utf8').trim()
    const headers = { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' }
    const body = {
      name: 'drain',
      type: 'QUEUE',
      image: 'hangar/echo:latest',
      cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
      workers: { min: 0, max: 0 },
      scaling: { type: 'QUEUE_DELAY', queueDelay: 1 },
    }
    const ep = (await (
      await fetch(`${p.url}/v2/serverless`, { method: 'POST', headers, body: JSON.stringify(body) })
    ).json()) as { id: string }
    // A long-poll in flight (no worker will ever take the job), and a client that connects and says nothing.
    const inFlight = fetch(`${p.url}/v2/${ep.id}/runsync?wait=60000`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ input: {} }),
    })
    const silent = connect(Number(new URL(p.url).port), '127.0.0.1')
    await new Promise((r) => silent.once('connect', r))
    await new Promise((r) => setTimeout(r, 200))
    const t0 = Date.now()
    p.child.kill('SIGTERM')
    const res = await inFlight
    expect(res.status).toBe(200)
    expect(((await res.json()) as { status: string }).status).toBe('IN_QUEUE')
    expect(await p.exited).toBe(0)
    // Node would hold a silent connection for its 60 s headers timeout; shutdown must not wait for it.
    expect(Date.now() - t0).toBeLessThan(30_000)
    silent.destroy()
  })

  it('uses HANGAR_ADMIN_API_KEY instead of generating a key', async () => {
    const dir = join(dataDir, 'preset')
    const p = await spawnServe(dir, { HANGAR_ADMIN_API_KEY: 'preset-admin-key-0123456789' })
    try {
      expect(
        (
          await fetch(`${p.url}/v2/admin/accounts`, {
            headers: { authorization: 'Bearer preset-admin-key-0123456789' },
          })
        ).status,
      ).toBe(200)
      expect(() => statSync(join(dir, 'admin-key'))).toThrow()
    } finally {
      p.child.kill('SIGTERM')
      await p.exited
    }
  })
})
