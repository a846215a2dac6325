import type { Role } from '../domain/members/roles.js'
import type { InvitationRecord, MemberKeyRecord, MemberRecord, SessionRecord } from './MemberStore.js'

type Row = Record<string, unknown>
const s = (v: unknown) => v as string
const n = (v: unknown) => (v ?? null) as string | null

/** Row mappings shared by the SQLite and PostgreSQL member stores (both keep TEXT columns). */
export const memberFromRow = (r: Row): MemberRecord => ({
  id: s(r.id),
  accountId: s(r.account_id),
  email: s(r.email),
  name: n(r.name),
  role: s(r.role) as Role,
  passwordHash: s(r.password_hash),
  oidcIssuer: n(r.oidc_issuer),
  oidcSubject: n(r.oidc_subject),
  createdAt: s(r.created_at),
  updatedAt: s(r.updated_at),
})

export const sessionFromRow = (r: Row): SessionRecord => ({
  id: s(r.id),
  memberId: s(r.member_id),
  accountId: s(r.account_id),
  tokenHash: s(r.token_hash),
  createdAt: s(r.created_at),
  expiresAt: s(r.expires_at),
  revokedAt: n(r.revoked_at),
  ip: n(r.ip),
})

export const memberKeyFromRow = (r: Row): MemberKeyRecord => ({
  id: s(r.id),
  memberId: s(r.member_id),
  accountId: s(r.account_id),
  name: n(r.name),
  role: s(r.role) as Role,
  hash: s(r.hash),
  prefix: s(r.prefix),
  createdAt: s(r.created_at),
  expiresAt: n(r.expires_at),
  revokedAt: n(r.revoked_at),
})

export const invitationFromRow = (r: Row): InvitationRecord => ({
  id: s(r.id),
  accountId: s(r.account_id),
  role: s(r.role) as Role,
  createdBy: s(r.created_by),
  tokenHash: s(r.token_hash),
  createdAt: s(r.created_at),
  expiresAt: s(r.expires_at),
  acceptedAt: n(r.accepted_at),
  memberId: n(r.member_id),
  revokedAt: n(r.revoked_at),
})
