import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import type { InvitationRecord, MemberRecord } from '../../src/store/MemberStore.js'
import type { Store } from '../../src/store/Store.js'

const at = (s: number) => new Date(Date.parse('2026-03-02T10:00:00.000Z') + s * 1000).toISOString()
const uid = (p: string) => `${p}_${randomUUID().slice(0, 8)}`

/** Member cases of the store contract; each case makes an account of its own on the shared store. */
export function memberCases(store: () => Store): void {
  describe('members, sessions, member keys and invitations', () => {
    const account = async () => {
      const id = uid('acc')
      await store().accounts.insert({ id, name: id, rateLimitExempt: false, createdAt: at(0) })
      return id
    }
    const member = (accountId: string, over: Partial<MemberRecord> = {}): MemberRecord => ({
      id: uid('mem'),
      accountId,
      email: `${uid('p')}@example.com`,
      name: 'Ada',
      role: 'developer',
      passwordHash: 'scrypt$1$1$1$salt$hash',
      oidcIssuer: null,
      oidcSubject: null,
      createdAt: at(1),
      updatedAt: at(1),
      ...over,
    })

    it('keeps members by id and unique email, lists an account oldest first, changes roles', async () => {
      const s = store()
      const a = await account()
      const b = await account()
      const m1 = member(a)
      const m2 = member(a, { createdAt: at(2), updatedAt: at(2), name: null, role: 'read-only' })
      await s.members.insert(m1)
      await s.members.insert(m2)
      await s.members.insert(member(b))
      expect(await s.members.get(m1.id)).toEqual(m1)
      expect(await s.members.getByEmail(m2.email)).toEqual(m2)
      expect(await s.members.list(a)).toEqual([m1, m2])
      await expect(s.members.insert(member(b, { email: m1.email }))).rejects.toThrow()
      expect(await s.members.setRole(m2.id, 'admin', at(9))).toBe(true)
      expect(await s.members.get(m2.id)).toEqual({ ...m2, role: 'admin', updatedAt: at(9) })
      expect(await s.members.setRole('mem_none', 'admin', at(9))).toBe(false)
      expect(await s.members.setPassword(m1.id, 'scrypt$2', at(10))).toBe(true)
      expect(await s.members.get(m1.id)).toEqual({ ...m1, passwordHash: 'scrypt$2', updatedAt: at(10) })
    })

    it('keeps an OpenID Connect identity per member: set once, unique, found by issuer and subject', async () => {
      const s = store()
      const a = await account()
      const issuer = `https://${uid('idp')}.example.com`
      const m1 = member(a, { oidcIssuer: issuer, oidcSubject: 'sub-1' })
      const m2 = member(a)
      const m3 = member(a)
      await s.members.insert(m1)
      await s.members.insert(m2)
      await s.members.insert(m3)
      expect(await s.members.getByOidc(issuer, 'sub-1')).toEqual(m1)
      expect(await s.members.getByOidc(issuer, 'sub-2')).toBeUndefined()
      expect(await s.members.getByOidc('https://other.example.com', 'sub-1')).toBeUndefined()
      // Members without one (many) do not collide; a second member with the same identity does.
      expect((await s.members.get(m2.id))?.oidcSubject).toBeNull()
      await expect(s.members.insert(member(a, { oidcIssuer: issuer, oidcSubject: 'sub-1' }))).rejects.toThrow()
      expect(await s.members.linkOidc(m2.id, issuer, 'sub-2', at(5))).toBe(true)
      expect(await s.members.getByOidc(issuer, 'sub-2')).toEqual({
        ...m2,
        oidcIssuer: issuer,
        oidcSubject: 'sub-2',
        updatedAt: at(5),
      })
      // Linked once: not replaced; and never onto a second member.
      expect(await s.members.linkOidc(m2.id, issuer, 'sub-3', at(6))).toBe(false)
      expect(await s.members.linkOidc('mem_none', issuer, 'sub-3', at(6))).toBe(false)
      await expect(s.members.linkOidc(m3.id, issuer, 'sub-2', at(6))).rejects.toThrow()
      expect((await s.members.get(m3.id))?.oidcSubject).toBeNull()
      // The same subject at another issuer is another identity.
      expect(await s.members.linkOidc(m3.id, 'https://other.example.com', 'sub-2', at(7))).toBe(true)
    })

    it('finds sessions and keys by hash, revokes them once, and deletes them with their member', async () => {
      const s = store()
      const a = await account()
      const m = member(a)
      await s.members.insert(m)
      const session = {
        id: uid('ses'),
        memberId: m.id,
        accountId: a,
        tokenHash: randomUUID(),
        createdAt: at(1),
        expiresAt: at(100),
        revokedAt: null,
        ip: '127.0.0.1',
      }
      await s.members.insertSession(session)
      expect(await s.members.findSession(session.tokenHash)).toEqual(session)
      expect(await s.members.getSession(session.id)).toEqual(session)
      expect(await s.members.getSession('ses_nobody')).toBeUndefined()
      expect(await s.members.revokeSession(session.id, at(5))).toBe(true)
      expect(await s.members.revokeSession(session.id, at(6))).toBe(false)
      expect((await s.members.findSession(session.tokenHash))?.revokedAt).toBe(at(5))
      const others = [1, 2, 3].map(() => ({ ...session, id: uid('ses'), tokenHash: randomUUID(), revokedAt: null }))
      for (const o of others) await s.members.insertSession(o)
      expect(await s.members.revokeSessions(m.id, at(6), others[0].id)).toBe(2)
      expect((await s.members.findSession(others[0].tokenHash))?.revokedAt).toBeNull()
      expect((await s.members.findSession(others[2].tokenHash))?.revokedAt).toBe(at(6))
      const key = {
        id: uid('mkey'),
        memberId: m.id,
        accountId: a,
        name: 'ci',
        role: 'read-only' as const,
        hash: randomUUID(),
        prefix: 'hm_abcd',
        createdAt: at(2),
        expiresAt: null,
        revokedAt: null,
      }
      await s.members.insertKey(key)
      expect(await s.members.findKey(key.hash)).toEqual(key)
      expect(await s.members.listKeys(m.id)).toEqual([key])
      expect(await s.members.revokeKey(key.id, at(7))).toBe(true)
      expect(await s.members.revokeKey(key.id, at(8))).toBe(false)
      expect(await s.members.delete(m.id)).toBe(true)
      expect(await s.members.delete(m.id)).toBe(false)
      expect(await s.members.findKey(key.hash)).toBeUndefined()
      expect(await s.members.findSession(session.tokenHash)).toBeUndefined()
    })

    it('accepts an open invitation exactly once, never an expired or revoked one, even when raced', async () => {
      const s = store()
      const a = await account()
      const inv = (over: Partial<InvitationRecord> = {}): InvitationRecord => ({
        id: uid('inv'),
        accountId: a,
        role: 'billing',
        createdBy: 'key_x',
        tokenHash: randomUUID(),
        createdAt: at(1),
        expiresAt: at(100),
        acceptedAt: null,
        memberId: null,
        revokedAt: null,
        ...over,
      })
      const open = inv()
      const expired = inv({ expiresAt: at(10) })
      const revoked = inv()
      for (const i of [open, expired, revoked]) await s.members.insertInvitation(i)
      expect(await s.members.findInvitation(open.tokenHash)).toEqual(open)
      expect(await s.members.listInvitations(a)).toHaveLength(3)
      const raced = await Promise.all([1, 2, 3].map((n) => s.members.acceptInvitation(open.id, `mem_${n}`, at(20))))
      expect(raced.filter(Boolean)).toHaveLength(1)
      const used = await s.members.getInvitation(open.id)
      expect(used?.acceptedAt).toBe(at(20))
      expect(used?.memberId).toBe(`mem_${raced.indexOf(true) + 1}`)
      expect(await s.members.revokeInvitation(open.id, at(21))).toBe(false)
      expect(await s.members.acceptInvitation(expired.id, 'mem_4', at(20))).toBe(false)
      expect(await s.members.revokeInvitation(revoked.id, at(20))).toBe(true)
      expect(await s.members.acceptInvitation(revoked.id, 'mem_5', at(21))).toBe(false)
    })
  })
}
