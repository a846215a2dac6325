import { createHash, timingSafeEqual } from 'node:crypto'
import type { Invitation, Member, MemberKey } from '../../contract/member.js'
import type { InvitationRecord, MemberKeyRecord, MemberRecord } from '../../store/MemberStore.js'

/** Tokens and keys are looked up by their sha256 (hex), like the account's API keys. */
export function sha256(s: string): string {
  return createHash('sha256').update(s).digest('hex')
}

/** Compares two sha256 hex digests in constant time. */
export function sameHash(a: string, b: string): boolean {
  return timingSafeEqual(Buffer.from(a, 'hex'), Buffer.from(b, 'hex'))
}

/** A member as the API shows it: never the password hash (nor the provider's subject id, which is theirs alone). */
export function memberView(m: MemberRecord): Member {
  const { passwordHash: _hash, oidcIssuer: _issuer, oidcSubject: _subject, ...rest } = m
  return rest
}

/** A member's key as the API shows it: never its hash. */
export function keyView(k: MemberKeyRecord): MemberKey {
  return {
    id: k.id,
    name: k.name,
    role: k.role,
    prefix: k.prefix,
    createdAt: k.createdAt,
    expiresAt: k.expiresAt,
    revokedAt: k.revokedAt,
  }
}

/** An invitation as the API shows it: never its token's hash. */
export function invitationView(i: InvitationRecord): Invitation {
  const { tokenHash: _hash, ...rest } = i
  return rest
}
