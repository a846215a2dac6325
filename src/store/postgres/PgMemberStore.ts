import type { Role } from '../../domain/members/roles.js'
import type { InvitationRecord, MemberKeyRecord, MemberRecord, MemberStore, SessionRecord } from '../MemberStore.js'
import { invitationFromRow, memberFromRow, memberKeyFromRow, sessionFromRow } from '../memberRows.js'
import type { PgQueryable } from './PgQueryable.js'

/** Members, sessions, member keys and invitations in PostgreSQL (migrations 180 and 190). */
export class PgMemberStore implements MemberStore {
  constructor(private readonly q: PgQueryable) {}
  private async one<T>(sql: string, args: unknown[], map: (r: Record<string, unknown>) => T): Promise<T | undefined> {
    const row = (await this.q.query(sql, args)).rows[0]
    return row ? map(row) : undefined
  }
  private async changed(sql: string, args: unknown[]): Promise<boolean> {
    return ((await this.q.query(sql, args)).rowCount ?? 0) > 0
  }
  async insert(m: MemberRecord) {
    await this.q.query(
      `INSERT INTO members (id, account_id, email, name, role, password_hash, oidc_issuer, oidc_subject, created_at,
         updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [
        m.id,
        m.accountId,
        m.email,
        m.name,
        m.role,
        m.passwordHash,
        m.oidcIssuer,
        m.oidcSubject,
        m.createdAt,
        m.updatedAt,
      ],
    )
  }
  get(id: string) {
    return this.one('SELECT * FROM members WHERE id = $1', [id], memberFromRow)
  }
  getByEmail(email: string) {
    return this.one('SELECT * FROM members WHERE email = $1', [email], memberFromRow)
  }
  getByOidc(issuer: string, subject: string) {
    return this.one(
      'SELECT * FROM members WHERE oidc_issuer = $1 AND oidc_subject = $2',
      [issuer, subject],
      memberFromRow,
    )
  }
  linkOidc(id: string, issuer: string, subject: string, at: string) {
    return this.changed(
      'UPDATE members SET oidc_issuer = $1, oidc_subject = $2, updated_at = $3 WHERE id = $4 AND oidc_subject IS NULL',
      [issuer, subject, at, id],
    )
  }
  async list(accountId: string) {
    const rows = (
      await this.q.query('SELECT * FROM members WHERE account_id = $1 ORDER BY created_at, id', [accountId])
    ).rows
    return rows.map(memberFromRow)
  }
  setRole(id: string, role: Role, at: string) {
    return this.changed('UPDATE members SET role = $1, updated_at = $2 WHERE id = $3', [role, at, id])
  }
  setPassword(id: string, passwordHash: string, at: string) {
    return this.changed('UPDATE members SET password_hash = $1, updated_at = $2 WHERE id = $3', [passwordHash, at, id])
  }
  async revokeSessions(memberId: string, at: string, exceptId?: string) {
    const res = await this.q.query(
      'UPDATE member_sessions SET revoked_at = $1 WHERE member_id = $2 AND id <> $3 AND revoked_at IS NULL',
      [at, memberId, exceptId ?? ''],
    )
    return res.rowCount ?? 0
  }
  delete(id: string) {
    return this.changed('DELETE FROM members WHERE id = $1', [id])
  }
  async insertSession(x: SessionRecord) {
    await this.q.query(
      `INSERT INTO member_sessions (id, member_id, account_id, token_hash, created_at, expires_at, revoked_at, ip)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [x.id, x.memberId, x.accountId, x.tokenHash, x.createdAt, x.expiresAt, x.revokedAt, x.ip],
    )
  }
  findSession(tokenHash: string) {
    return this.one('SELECT * FROM member_sessions WHERE token_hash = $1', [tokenHash], sessionFromRow)
  }
  getSession(id: string) {
    return this.one('SELECT * FROM member_sessions WHERE id = $1', [id], sessionFromRow)
  }
  revokeSession(id: string, at: string) {
    return this.changed('UPDATE member_sessions SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [at, id])
  }
  async insertKey(k: MemberKeyRecord) {
    await this.q.query(
      `INSERT INTO member_keys (id, member_id, account_id, name, role, hash, prefix, created_at, expires_at, revoked_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [k.id, k.memberId, k.accountId, k.name, k.role, k.hash, k.prefix, k.createdAt, k.expiresAt, k.revokedAt],
    )
  }
  findKey(hash: string) {
    return this.one('SELECT * FROM member_keys WHERE hash = $1', [hash], memberKeyFromRow)
  }
  async listKeys(memberId: string) {
    const rows = (
      await this.q.query('SELECT * FROM member_keys WHERE member_id = $1 ORDER BY created_at, id', [memberId])
    ).rows
    return rows.map(memberKeyFromRow)
  }
  revokeKey(id: string, at: string) {
    return this.changed('UPDATE member_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [at, id])
  }
  async insertInvitation(i: InvitationRecord) {
    await this.q.query(
      `INSERT INTO invitations (id, account_id, role, created_by, token_hash, created_at, expires_at, accepted_at,
         member_id, revoked_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [
        i.id,
        i.accountId,
        i.role,
        i.createdBy,
        i.tokenHash,
        i.createdAt,
        i.expiresAt,
        i.acceptedAt,
        i.memberId,
        i.revokedAt,
      ],
    )
  }
  getInvitation(id: string) {
    return this.one('SELECT * FROM invitations WHERE id = $1', [id], invitationFromRow)
  }
  findInvitation(tokenHash: string) {
    return this.one('SELECT * FROM invitations WHERE token_hash = $1', [tokenHash], invitationFromRow)
  }
  async listInvitations(accountId: string) {
    const rows = (
      await this.q.query('SELECT * FROM invitations WHERE account_id = $1 ORDER BY created_at, id', [accountId])
    ).rows
    return rows.map(invitationFromRow)
  }
  acceptInvitation(id: string, memberId: string, at: string) {
    return this.changed(
      `UPDATE invitations SET accepted_at = $1, member_id = $2
       WHERE id = $3 AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > $1`,
      [at, memberId, id],
    )
  }
  revokeInvitation(id: string, at: string) {
    return this.changed(
      'UPDATE invitations SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL AND accepted_at IS NULL',
      [at, id],
    )
  }
}
