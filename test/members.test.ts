import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { addMember, type TestMember } from './helpers/members.js'
import { startTestServer, type TestServer } from './helpers/server.js'

describe('members: sign-in, sessions, roles, keys and invitations, as an attacker would try them', () => {
  let s: TestServer
  let teamKey: string
  let owner: TestMember
  let admin: TestMember
  let dev: TestMember
  let otherOwner: TestMember

  beforeAll(async () => {
    s = await startTestServer()
    teamKey = await s.accountKey('team-a')
    owner = await addMember(s, teamKey, 'owner')
    admin = await addMember(s, owner.token, 'admin')
    dev = await addMember(s, admin.token, 'developer')
    otherOwner = await addMember(s, await s.accountKey('team-b'), 'owner')
  })
  afterAll(async () => {
    await s?.stop()
  })

  const signIn = (email: string, password: string) => s.api('POST', '/v2/sessions', { email, password }, null)

  it('signs in with email and password to a new session each time; a wrong password and an unknown email read alike', async () => {
    const a = await signIn(dev.email.toUpperCase(), dev.password)
    const b = await signIn(dev.email, dev.password)
    expect(a.status).toBe(201)
    expect(a.body.token).toMatch(/^hs_/)
    expect(a.body.token).not.toBe(b.body.token)
    expect(a.body.member).toMatchObject({ id: dev.id, role: 'developer' })
    expect(JSON.stringify(a.body)).not.toMatch(/scrypt|passwordHash/)
    const wrong = await signIn(dev.email, 'not the password at all')
    const unknown = await signIn('nobody@example.com', 'not the password at all')
    expect([wrong.status, unknown.status]).toEqual([401, 401])
    expect(wrong.body.detail).toBe(unknown.body.detail)
    // Sessions are made by the server only: a token the client makes up is nobody's.
    expect((await s.api('GET', '/v2/me', undefined, `hs_${'A'.repeat(43)}`)).status).toBe(401)
    const me = await s.api('GET', '/v2/me', undefined, a.body.token)
    expect(me.body).toMatchObject({ kind: 'member', member: { id: dev.id }, admin: false })
    expect(me.body.permissions).toContain('workloads.write')
    expect((await s.api('DELETE', '/v2/sessions/current', undefined, a.body.token)).status).toBe(204)
    expect((await s.api('GET', '/v2/me', undefined, a.body.token)).status).toBe(401)
    expect((await s.api('GET', '/v2/me', undefined, b.body.token)).status).toBe(200)
  })

  it('keeps a developer from raising anyone: no invitations, no role changes, no key above developer', async () => {
    const invite = await s.api('POST', '/v2/invitations', { role: 'admin' }, dev.token)
    expect(invite.status).toBe(403)
    expect(invite.body.detail).toMatch(/members\.write/)
    expect((await s.api('PATCH', `/v2/members/${dev.id}`, { role: 'owner' }, dev.token)).status).toBe(403)
    const key = await s.api('POST', '/v2/me/keys', { role: 'admin' }, dev.token)
    expect(key.status).toBe(403)
    expect(key.body.detail).toMatch(/a key cannot carry more than its member: admin needs .*members\.write/)
    expect(key.body.errors).toEqual(['role: at most developer'])
    expect((await s.api('POST', '/v2/admin/keys', { account: 'team-a', permission: 'ALL' }, dev.token)).status).toBe(
      403,
    )
  })

  it('keeps an admin from owners: cannot make one, change one, or remove one; nobody changes their own role', async () => {
    expect((await s.api('POST', '/v2/invitations', { role: 'owner' }, admin.token)).body.detail).toMatch(
      /only an owner can make an owner/,
    )
    expect((await s.api('PATCH', `/v2/members/${dev.id}`, { role: 'owner' }, admin.token)).status).toBe(403)
    expect((await s.api('PATCH', `/v2/members/${owner.id}`, { role: 'developer' }, admin.token)).status).toBe(403)
    expect((await s.api('DELETE', `/v2/members/${owner.id}`, undefined, admin.token)).status).toBe(403)
    expect((await s.api('PATCH', `/v2/members/${admin.id}`, { role: 'owner' }, admin.token)).status).toBe(403)
    // The last owner stays one, even by their own hand.
    const last = await s.api('DELETE', `/v2/members/${owner.id}`, undefined, owner.token)
    expect(last.status).toBe(409)
    expect(last.body.detail).toMatch(/last owner/)
  })

  it("keeps accounts apart: another account's members are not found, and its lists show only its own", async () => {
    expect((await s.api('PATCH', `/v2/members/${dev.id}`, { role: 'read-only' }, otherOwner.token)).status).toBe(404)
    expect((await s.api('DELETE', `/v2/members/${dev.id}`, undefined, otherOwner.token)).status).toBe(404)
    const listed = (await s.api('GET', '/v2/members', undefined, otherOwner.token)).body.members
    expect(listed.map((m: { id: string }) => m.id)).toEqual([otherOwner.id])
    const theirs = (await s.api('GET', '/v2/invitations', undefined, owner.token)).body.invitations[0]
    expect((await s.api('DELETE', `/v2/invitations/${theirs.id}`, undefined, otherOwner.token)).status).toBe(404)
    expect(
      (await s.api('POST', '/v2/invitations', { role: 'owner', account: 'team-a' }, otherOwner.token)).status,
    ).toBe(403)
    // The admin key invites into a tenant account, never into its own (whose workloads run unsandboxed).
    expect((await s.api('POST', '/v2/invitations', { role: 'owner', account: 'team-b' })).status).toBe(201)
    const admins = await s.api('POST', '/v2/invitations', { role: 'developer' })
    expect(admins.status).toBe(403)
    expect(admins.body.detail).toMatch(/admin account takes no members/)
  })

  it('uses an invitation once: a second accept, raced ones and a revoked one are refused (expiry: the store contract)', async () => {
    const inv = (await s.api('POST', '/v2/invitations', { role: 'read-only' }, owner.token)).body
    expect(inv.url).toBe(`${s.url}/console/invite#${inv.token}`)
    expect((await s.api('POST', '/v2/invitations/preview', { token: inv.token }, null)).body).toMatchObject({
      accountName: 'team-a',
      role: 'read-only',
    })
    const accepts = await Promise.all(
      [1, 2, 3].map((i) =>
        s.api(
          'POST',
          '/v2/invitations/accept',
          { token: inv.token, email: `race-${i}@example.com`, password: 'a long enough password' },
          null,
        ),
      ),
    )
    expect(accepts.map((a) => a.status).sort()).toEqual([201, 404, 404])
    const again = await s.api(
      'POST',
      '/v2/invitations/accept',
      { token: inv.token, email: 'again@example.com', password: 'a long enough password' },
      null,
    )
    expect(again.status).toBe(404)
    const revoked = (await s.api('POST', '/v2/invitations', { role: 'billing' }, owner.token)).body
    expect((await s.api('DELETE', `/v2/invitations/${revoked.id}`, undefined, owner.token)).status).toBe(204)
    expect((await s.api('POST', '/v2/invitations/preview', { token: revoked.token }, null)).status).toBe(404)
    const short = await s.api(
      'POST',
      '/v2/invitations/accept',
      { token: 'made-up', email: 'x@example.com', password: 'short' },
      null,
    )
    expect(short.status).toBe(422)
    expect(JSON.stringify(short.body.errors)).toMatch(/password/)
  })

  it("narrows a member's key to its role and to the member's current role, and ends it with the member", async () => {
    // Read-only reads billing, which a developer may not: a developer cannot issue a read-only key.
    const beyond = await s.api('POST', '/v2/me/keys', { role: 'read-only' }, dev.token)
    expect(beyond.status).toBe(403)
    expect(beyond.body.detail).toMatch(/read-only needs billing\.read/)
    const ro = await s.api('POST', '/v2/me/keys', { name: 'ci', role: 'read-only' }, admin.token)
    expect(ro.status).toBe(201)
    expect(ro.body.key).toMatch(/^hm_/)
    const full = (await s.api('POST', '/v2/me/keys', {}, dev.token)).body
    expect(full.role).toBe('developer')
    expect((await s.api('GET', '/v2/templates', undefined, ro.body.key)).status).toBe(200)
    expect((await s.api('POST', '/v2/templates', { name: 't', imageName: 'x' }, ro.body.key)).status).toBe(403)
    // A read-only key cannot mint a broader key for its member (an admin).
    expect((await s.api('POST', '/v2/me/keys', { role: 'developer' }, ro.body.key)).status).toBe(403)
    expect((await s.api('PATCH', `/v2/members/${dev.id}`, { role: 'billing' }, ro.body.key)).status).toBe(403)
    // Demoted: the member's developer key acts as read-only from the next request.
    expect((await s.api('PATCH', `/v2/members/${dev.id}`, { role: 'read-only' }, admin.token)).status).toBe(200)
    const refused = await s.api('POST', '/v2/secrets', { name: 'n', value: 'v' }, full.key)
    expect(refused.status).toBe(403)
    expect(refused.body.detail).toMatch(/workloads\.write/)
    expect((await s.api('POST', '/v2/secrets', { name: 'n', value: 'v' }, dev.token)).status).toBe(403)
    expect((await s.api('DELETE', `/v2/members/${dev.id}`, undefined, admin.token)).status).toBe(204)
    expect((await s.api('POST', `/v2/me/keys/${ro.body.id}/revoke`, undefined, admin.token)).status).toBe(200)
    for (const key of [ro.body.key, full.key, dev.token])
      expect((await s.api('GET', '/v2/templates', undefined, key)).status).toBe(401)
  })

  it('holds load-balancer WebSocket upgrades to the same table: a read-only member is refused before any endpoint is looked up', async () => {
    const upgrade = (token: string) =>
      new Promise<{ status: number; detail: string }>((resolve) => {
        const ws = new WebSocket(`${s.url.replace('http', 'ws')}/lb/no-such-endpoint/ws`, {
          headers: { authorization: `Bearer ${token}` },
        })
        ws.once('unexpected-response', (_req, res) => {
          let body = ''
          res.on('data', (c) => (body += c))
          res.on('end', () => resolve({ status: res.statusCode ?? 0, detail: body }))
        })
        ws.once('error', () => resolve({ status: -1, detail: '' }))
      })
    const reader = await addMember(s, owner.token, 'read-only', 'lb-reader')
    const builder = await addMember(s, owner.token, 'developer', 'lb-builder')
    const refused = await upgrade(reader.token)
    expect(refused.status).toBe(403)
    expect(refused.detail).toMatch(/workloads\.write/)
    expect((await upgrade(builder.token)).status).toBe(404)
  })

  it('leaves the account keys as they were: READ_ONLY reads members, only ALL invites, RESTRICTED neither', async () => {
    const readOnly = await s.accountKey('team-a', 'READ_ONLY')
    expect((await s.api('GET', '/v2/members', undefined, readOnly)).status).toBe(200)
    expect((await s.api('POST', '/v2/invitations', { role: 'billing' }, readOnly)).status).toBe(403)
    expect((await s.api('GET', '/v2/me', undefined, readOnly)).body).toMatchObject({ kind: 'key', member: null })
    expect((await s.api('POST', '/v2/me/keys', {}, teamKey)).status).toBe(403)
  })

  it('records sign-ins, refused sign-ins and role changes with the member as the actor', async () => {
    const m = await addMember(s, owner.token, 'billing', 'audited')
    expect((await signIn(m.email, 'wrong password here')).status).toBe(401)
    expect((await signIn(m.email, m.password)).status).toBe(201)
    expect((await s.api('PATCH', `/v2/members/${m.id}`, { role: 'read-only' }, owner.token)).status).toBe(200)
    const entries = (await s.api('GET', '/v2/audit?limit=10', undefined, owner.token)).body.entries
    const mine = entries.map((e: any) => [e.action, e.outcome, e.actor.type, e.actor.id, e.resourceId])
    expect(mine).toEqual(
      expect.arrayContaining([
        ['member.role.set', 'success', 'member', owner.id, m.id],
        ['member.sign-in', 'success', 'member', m.id, null],
        ['member.sign-in', 'refused', 'member', m.id, null],
        ['invitation.accept', 'success', 'member', m.id, null],
      ]),
    )
    expect(JSON.stringify(entries)).not.toContain(m.password)
  })
})
