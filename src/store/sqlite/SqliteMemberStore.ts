import type Database from 'better-sqlite3'
import type { Role } from '../../domain/members/roles.js'
import type { InvitationRecord, MemberKeyRecord, MemberRecord, MemberStore, SessionRecord } from '../MemberStore.js'
import { invitationFromRow, memberFromRow, memberKeyFromRow, sessionFromRow } from '../memberRows.js'

type Row = Record<string, unknown>

/** Members, sessions, member keys and invitations in SQLite (migrations 180 and 190). */
export class SqliteMemberStore implements MemberStore {
  private readonly st
  constructor(db: Database.Database) {
    const p = (sql: string) => db.prepare(sql)
    this.st = {
      insert:
        p(`INSERT INTO members (id, account_id, email, name, role, password_hash, oidc_issuer, oidc_subject, created_at, updated_at)
        VALUES (@id, @accountId, @email, @name, @role, @passwordHash, @oidcIssuer, @oidcSubject, @createdAt, @updatedAt)`),
      get: p('SELECT * FROM members WHERE id = ?'),
      byEmail: p('SELECT * FROM members WHERE email = ?'),
      byOidc: p('SELECT * FROM members WHERE oidc_issuer = ? AND oidc_subject = ?'),
      linkOidc: p(
        'UPDATE members SET oidc_issuer = ?, oidc_subject = ?, updated_at = ? WHERE id = ? AND oidc_subject IS NULL',
      ),
      list: p('SELECT * FROM members WHERE account_id = ? ORDER BY created_at, id'),
      setRole: p('UPDATE members SET role = ?, updated_at = ? WHERE id = ?'),
      setPassword: p('UPDATE members SET password_hash = ?, updated_at = ? WHERE id = ?'),
      revokeSessions: p(
        'UPDATE member_sessions SET revoked_at = ? WHERE member_id = ? AND id <> ? AND revoked_at IS NULL',
      ),
      del: p('DELETE FROM members WHERE id = ?'),
      insSession:
        p(`INSERT INTO member_sessions (id, member_id, account_id, token_hash, created_at, expires_at, revoked_at, ip)
        VALUES (@id, @memberId, @accountId, @tokenHash, @createdAt, @expiresAt, @revokedAt, @ip)`),
      session: p('SELECT * FROM member_sessions WHERE token_hash = ?'),
      sessionById: p('SELECT * FROM member_sessions WHERE id = ?'),
      revokeSession: p('UPDATE member_sessions SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),
      insKey:
        p(`INSERT INTO member_keys (id, member_id, account_id, name, role, hash, prefix, created_at, expires_at, revoked_at)
        VALUES (@id, @memberId, @accountId, @name, @role, @hash, @prefix, @createdAt, @expiresAt, @revokedAt)`),
      key: p('SELECT * FROM member_keys WHERE hash = ?'),
      keys: p('SELECT * FROM member_keys WHERE member_id = ? ORDER BY created_at, id'),
      revokeKey: p('UPDATE member_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),
      insInv:
        p(`INSERT INTO invitations (id, account_id, role, created_by, token_hash, created_at, expires_at, accepted_at, member_id, revoked_at)
        VALUES (@id, @accountId, @role, @createdBy, @tokenHash, @createdAt, @expiresAt, @acceptedAt, @memberId, @revokedAt)`),
      inv: p('SELECT * FROM invitations WHERE id = ?'),
      invByToken: p('SELECT * FROM invitations WHERE token_hash = ?'),
      invs: p('SELECT * FROM invitations WHERE account_id = ? ORDER BY created_at, id'),
      accept: p(`UPDATE invitations SET accepted_at = ?, member_id = ?
        WHERE id = ? AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > ?`),
      revokeInv: p('UPDATE invitations SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL AND accepted_at IS NULL'),
    }
  }
  async insert(m: MemberRecord) {
    this.st.insert.run(m)
  }
  async get(id: string) {
    const r = this.st.get.get(id) as Row | undefined
    return r ? memberFromRow(r) : undefined
  }
  async getByEmail(email: string) {
    const r = this.st.byEmail.get(email) as Row | undefined
    return r ? memberFromRow(r) : undefined
  }
  async getByOidc(issuer: string, subject: string) {
    const r = this.st.byOidc.get(issuer, subject) as Row | undefined
    return r ? memberFromRow(r) : undefined
  }
  async linkOidc(id: string, issuer: string, subject: string, at: string) {
    return this.st.linkOidc.run(issuer, subject, at, id).changes > 0
  }
  async list(accountId: string) {
    return (this.st.list.all(accountId) as Row[]).map(memberFromRow)
  }
  async setRole(id: string, role: Role, at: string) {
    return this.st.setRole.run(role, at, id).changes > 0
  }
  async setPassword(id: string, passwordHash: string, at: string) {
    return this.st.setPassword.run(passwordHash, at, id).changes > 0
  }
  async revokeSessions(memberId: string, at: string, exceptId?: string) {
    return this.st.revokeSessions.run(at, memberId, exceptId ?? '').changes
  }
  async delete(id: string) {
    return this.st.del.run(id).changes > 0
  }
  async insertSession(x: SessionRecord) {
    this.st.insSession.run(x)
  }
  async findSession(tokenHash: string) {
    const r = this.st.session.get(tokenHash) as Row | undefined
    return r ? sessionFromRow(r) : undefined
  }
  async getSession(id: string) {
    const r = this.st.sessionById.get(id) as Row | undefined
    return r ? sessionFromRow(r) : undefined
  }
  async revokeSession(id: string, at: string) {
    return this.st.revokeSession.run(at, id).changes > 0
  }
  async insertKey(k: MemberKeyRecord) {
    this.st.insKey.run(k)
  }
  async findKey(hash: string) {
    const r = this.st.key.get(hash) as Row | undefined
    return r ? memberKeyFromRow(r) : undefined
  }
  async listKeys(memberId: string) {
    return (this.st.keys.all(memberId) as Row[]).map(memberKeyFromRow)
  }
  async revokeKey(id: string, at: string) {
    return this.st.revokeKey.run(at, id).changes > 0
  }
  async insertInvitation(i: InvitationRecord) {
    this.st.insInv.run(i)
  }
  async getInvitation(id: string) {
    const r = this.st.inv.get(id) as Row | undefined
    return r ? invitationFromRow(r) : undefined
  }
  async findInvitation(tokenHash: string) {
    const r = this.st.invByToken.get(tokenHash) as Row | undefined
    return r ? invitationFromRow(r) : undefined
  }
  async listInvitations(accountId: string) {
    return (this.st.invs.all(accountId) as Row[]).map(invitationFromRow)
  }
  async acceptInvitation(id: string, memberId: string, at: string) {
    return this.st.accept.run(at, memberId, id, at).changes > 0
  }
  async revokeInvitation(id: string, at: string) {
    return this.st.revokeInv.run(at, id).changes > 0
  }
}
