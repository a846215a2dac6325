import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { addMember, type TestMember } from './helpers/members.js'
import { createPod, podBody, terminateAll, waitPod, waitPortAnswers } from './helpers/pods.js'
import { startTestServer, type TestServer } from './helpers/server.js'

/** Boundaries of members tried from outside: what a member's credentials leave behind once they end. */
describe('members: what outlives a member', () => {
  let s: TestServer
  let teamKey: string
  let owner: TestMember

  beforeAll(async () => {
    s = await startTestServer()
    teamKey = await s.accountKey('atk-team')
    owner = await addMember(s, teamKey, 'owner')
  })
  afterAll(async () => {
    await terminateAll(s, teamKey)
    await s?.stop()
  })

  /** The cookie a pod's link leaves, as a browser would keep it. */
  async function linkJar(url: string): Promise<string> {
    const first = await fetch(url, { redirect: 'manual' })
    expect(first.status).toBe(303)
    return first.headers.get('set-cookie')!.split(';')[0]
  }

  it("ends a member's links to pods' ports with the session, the member, or a demotion", async () => {
    const pod = await createPod(s, podBody({ name: 'linked' }), teamKey)
    await waitPortAnswers(await waitPod(s, pod.id, 'RUNNING', teamKey), 8080)
    const proxied = (jar: string, method = 'GET') =>
      fetch(`${s.url}/proxy/${pod.id}/8080/files/x.txt`, {
        method,
        body: method === 'PUT' ? 'x' : undefined,
        headers: { cookie: jar },
      }).then((r) => r.status)
    const linkOf = async (token: string) => {
      const c = await s.api('GET', `/v2/pods/${pod.id}/connections`, undefined, token)
      expect(c.status, JSON.stringify(c.body)).toBe(200)
      return linkJar(c.body.http[0].url)
    }

    // Control: a developer's link writes, and keeps working while the developer does.
    const dev = await addMember(s, owner.token, 'developer')
    const devJar = await linkOf(dev.token)
    expect(await proxied(devJar, 'PUT')).not.toBe(403)
    expect(await proxied(devJar)).toBe(200)

    // Signed out: the session's links end with it.
    const signedOut = await addMember(s, owner.token, 'developer')
    const signedOutJar = await linkOf(signedOut.token)
    expect((await s.api('DELETE', '/v2/sessions/current', undefined, signedOut.token)).status).toBe(204)
    expect(await proxied(signedOutJar)).toBe(401)

    // Removed: every link the member opened ends.
    const removed = await addMember(s, owner.token, 'developer')
    const removedJar = await linkOf(removed.token)
    expect((await s.api('DELETE', `/v2/members/${removed.id}`, undefined, owner.token)).status).toBe(204)
    expect(await proxied(removedJar)).toBe(401)
    expect(await proxied(removedJar, 'PUT')).toBe(401)

    // Demoted to read-only: the developer's link reads and no longer writes.
    const demoted = await addMember(s, owner.token, 'developer')
    const demotedJar = await linkOf(demoted.token)
    expect((await s.api('PATCH', `/v2/members/${demoted.id}`, { role: 'read-only' }, owner.token)).status).toBe(200)
    expect(await proxied(demotedJar)).toBe(200)
    expect(await proxied(demotedJar, 'PUT')).toBe(403)
    // Demoted to billing: nothing at all.
    expect((await s.api('PATCH', `/v2/members/${demoted.id}`, { role: 'billing' }, owner.token)).status).toBe(200)
    expect(await proxied(demotedJar)).toBe(403)

    // A member's own key: revoking it ends its links.
    const keyed = await addMember(s, owner.token, 'developer')
    const key = (await s.api('POST', '/v2/me/keys', { name: 'script' }, keyed.token)).body
    const keyJar = await linkOf(key.key)
    expect(await proxied(keyJar)).toBe(200)
    expect((await s.api('POST', `/v2/me/keys/${key.id}/revoke`, undefined, keyed.token)).status).toBe(200)
    expect(await proxied(keyJar)).toBe(401)

    // The account's API keys alike: a revoked key's links end.
    const apiKey = (await s.api('POST', '/v2/admin/keys', { account: 'atk-team', permission: 'ALL' })).body
    const apiJar = await linkOf(apiKey.key)
    expect(await proxied(apiJar)).toBe(200)
    expect((await s.api('POST', `/v2/admin/keys/${apiKey.id}/revoke`)).status).toBe(200)
    expect(await proxied(apiJar)).toBe(401)
  })

  it('ends the invitations a member made when they are removed, and those above their new role when demoted', async () => {
    const accept = (token: string, tag: string) =>
      s.api(
        'POST',
        '/v2/invitations/accept',
        { token, email: `${tag}-${Date.now()}@example.com`, password: 'correct horse battery staple' },
        null,
      )
    const invite = async (by: string, role: string) => {
      const r = await s.api('POST', '/v2/invitations', { role }, by)
      expect(r.status, JSON.stringify(r.body)).toBe(201)
      return r.body.token as string
    }
    // Control: an admin's invitation works while the admin does.
    const admin = await addMember(s, owner.token, 'admin')
    expect((await accept(await invite(admin.token, 'developer'), 'ctl')).status).toBe(201)

    // An admin about to be removed keeps an admin link, to come back under another email: it ends with them.
    const leaving = await addMember(s, owner.token, 'admin')
    const kept = await invite(leaving.token, 'admin')
    expect((await s.api('DELETE', `/v2/members/${leaving.id}`, undefined, owner.token)).status).toBe(204)
    expect((await accept(kept, 'back')).status).toBe(404)

    // Demoted to developer: their admin invitation ends, a developer one they may still give stays.
    const demoted = await addMember(s, owner.token, 'admin')
    const above = await invite(demoted.token, 'admin')
    const within = await invite(demoted.token, 'developer')
    expect((await s.api('PATCH', `/v2/members/${demoted.id}`, { role: 'developer' }, owner.token)).status).toBe(200)
    expect((await accept(above, 'above')).status).toBe(404)
    expect((await accept(within, 'within')).status).toBe(201)

    // The account's revoked API key: its invitations end too.
    const apiKey = (await s.api('POST', '/v2/admin/keys', { account: 'atk-team', permission: 'ALL' })).body
    const byKey = await invite(apiKey.key, 'owner')
    expect((await s.api('POST', `/v2/admin/keys/${apiKey.id}/revoke`)).status).toBe(200)
    expect((await accept(byKey, 'bykey')).status).toBe(404)
  })

  it("keeps a member's key from minting keys: one would outlive the other's revocation and expiry", async () => {
    const dev = await addMember(s, owner.token, 'developer')
    // Control: the signed-in member issues keys, an expiring one among them.
    const expiresAt = new Date(Date.now() + 3600_000).toISOString()
    const leaked = await s.api('POST', '/v2/me/keys', { name: 'ci', expiresAt }, dev.token)
    expect(leaked.status).toBe(201)
    // Whoever holds the key (leaked from CI, say) tries to keep a foothold past its expiry and revocation.
    const minted = await s.api('POST', '/v2/me/keys', { name: 'foothold' }, leaked.body.key)
    expect(minted.status).toBe(403)
    expect(minted.body.detail).toMatch(/session/)
    expect((await s.api('POST', `/v2/me/keys/${leaked.body.id}/revoke`, undefined, dev.token)).status).toBe(200)
    expect((await s.api('GET', '/v2/me/keys', undefined, dev.token)).body.keys).toHaveLength(1)
  })

  it('answers two invitations accepted at once with one email: one member, and a 409 for the other (not a 500)', async () => {
    const other = await s.accountKey('atk-other')
    const email = `twice-${Date.now()}@example.com`
    const invitations = [
      (await s.api('POST', '/v2/invitations', { role: 'read-only' }, teamKey)).body,
      (await s.api('POST', '/v2/invitations', { role: 'read-only' }, other)).body,
    ]
    const answers = await Promise.all(
      invitations.map((i) =>
        s.api('POST', '/v2/invitations/accept', { token: i.token, email, password: 'correct horse battery x' }, null),
      ),
    )
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409])
    // The refused one is not spent: it can still be accepted with another email.
    const lost = invitations[answers.findIndex((a) => a.status === 409)]
    expect((await s.api('POST', '/v2/invitations/preview', { token: lost.token }, null)).status).toBe(200)
  })
})
