import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { main } from '../src/cli/main.js'
import { addMember } from './helpers/members.js'
import { startTestServer, type TestServer } from './helpers/server.js'

describe('hangar members (in process, against a real server)', () => {
  let s: TestServer
  let key: string
  beforeAll(async () => {
    s = await startTestServer()
    key = await s.accountKey('cli-team')
  })
  afterAll(async () => {
    await s?.stop()
  })

  /** Runs `hangar <args> --url … --api-key …` and returns its exit code and what it printed. */
  const hangar = async (args: string[], apiKey = key) => {
    let out = ''
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      out += String(chunk)
      return true
    })
    try {
      const code = await main([...args, '--url', s.url, '--api-key', apiKey])
      return { code, out }
    } finally {
      spy.mockRestore()
    }
  }

  it('invites by link, lists members and invitations, changes a role and removes a member', async () => {
    const invited = await hangar(['members', 'invite', '--role', 'developer', '--json'])
    expect(invited.code).toBe(0)
    const inv = JSON.parse(invited.out)
    expect(inv.url).toBe(`${s.url}/console/invite#${inv.token}`)
    expect((await hangar(['members', 'invitations'])).out).toMatch(new RegExp(`${inv.id}\\s+developer`))
    const owner = await addMember(s, key, 'owner')
    const dev = await addMember(s, owner.token, 'developer')
    expect((await hangar(['members', 'list'])).out).toContain(dev.email)
    expect((await hangar(['members', 'set-role', dev.id, 'billing', '--json'], owner.token)).out).toMatch(/"billing"/)
    expect((await hangar(['members', 'set-role', dev.id, 'boss'])).code).not.toBe(0)
    expect(JSON.parse((await hangar(['members', 'me', '--json'], dev.token)).out).member.role).toBe('billing')
    const created = JSON.parse((await hangar(['members', 'create-key', '--name', 'ci', '--json'], dev.token)).out)
    expect(created.role).toBe('billing')
    expect((await hangar(['members', 'remove', dev.id], owner.token)).code).toBe(0)
    expect((await hangar(['members', 'me'], created.key)).code).not.toBe(0)
  })
})
