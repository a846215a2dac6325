import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawnServe, type ServeProcess } from './helpers/process.js'

const run = promisify(execFile)
const BIN = fileURLToPath(new URL('../bin/hangar.js', import.meta.url))

describe('hangar accounts / keys commands', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hangar-cli-'))
  let server: ServeProcess
  beforeAll(async () => {
    server = await spawnServe(join(dir, 'data'))
  })
  afterAll(async () => {
    server.child.kill('SIGTERM')
    await server.exited
    rmSync(dir, { recursive: true, force: true })
  })

  // The CLI finds the admin key in the data dir, as a user on the server machine would.
  const hangar = (...args: string[]) => run(process.execPath, [BIN, ...args, '--url', server.url, '--data-dir', join(dir, 'data')])

  it('creates an account and a key shown once, lists keys without it, and revokes it', async () => {
    const account = JSON.parse((await hangar('accounts', 'create', 'acme')).stdout)
    expect(account).toMatchObject({ name: 'acme', rateLimitExempt: false })

    const created = await hangar('keys', 'create', '--account', 'acme', '--permission', 'RESTRICTED', '--endpoint', 'ep1', '--endpoint', 'ep2', '--expires', '2099-01-01')
    const key = JSON.parse(created.stdout)
    expect(key).toMatchObject({ permission: 'RESTRICTED', endpointIds: ['ep1', 'ep2'], expiresAt: '2099-01-01T00:00:00.000Z', accountName: 'acme' })
    expect(key.key).toMatch(/^hk_/)
    expect(created.stderr).toMatch(/shown only now/)

    const listed = (await hangar('keys', 'list')).stdout
    expect(listed).toContain(key.id)
    expect(listed).not.toContain(key.key)

    const revoked = JSON.parse((await hangar('keys', 'revoke', key.id)).stdout)
    expect(revoked.revokedAt).toBeTruthy()
    const res = await fetch(`${server.url}/v2/catalog/gpus`, { headers: { authorization: `Bearer ${key.key}` } })
    expect(res.status).toBe(401)
  })

  it('prints the problem and exits non-zero on a refused request', async () => {
    const err = await hangar('keys', 'create', '--account', 'nobody', '--permission', 'ALL').catch((e: { code: number; stderr: string }) => e)
    expect(err).toMatchObject({ code: 1 })
    expect((err as { stderr: string }).stderr).toMatch(/404 Not Found: account "nobody" was not found/)
  })
})
