import type { Role } from '../domain/members/roles.js'

/** A person who signs in to an account with their own credentials and acts with a role. */
export interface MemberRecord {
  id: string
  accountId: string
  /** Lower case; unique across the installation (a person signs in with it without naming an account). */
  email: string
  name: string | null
  role: Role
  /** `scrypt$N$r$p$salt$hash` (see domain/members/password.ts); never leaves the server. */
  passwordHash: string
  /**
   * The OpenID Connect identity (issuer URL and `sub`) the member signs in with, or null: set when they join
   * through the provider or link it while signed in; unique where set.
   */
  oidcIssuer: string | null
  oidcSubject: string | null
  createdAt: string
  updatedAt: string
}

/** A signed-in browser or CLI: an opaque token of which only the sha256 is stored. */
export interface SessionRecord {
  id: string
  memberId: string
  accountId: string
  /** sha256 of the token, hex. */
  tokenHash: string
  createdAt: string
  expiresAt: string
  revokedAt: string | null
  ip: string | null
}

/** An invitation by link: single use, with an expiry; the token is stored hashed like a key. */
export interface InvitationRecord {
  id: string
  accountId: string
  role: Role
  /** Who invited: a member's id or a key's id. */
  createdBy: string
  tokenHash: string
  createdAt: string
  expiresAt: string
  acceptedAt: string | null
  /** The member the invitation made. */
  memberId: string | null
  revokedAt: string | null
}

/** An API key a member issued for themself; it carries at most the member's role (checked at each use). */
export interface MemberKeyRecord {
  id: string
  memberId: string
  accountId: string
  name: string | null
  role: Role
  /** sha256 of the key, hex. */
  hash: string
  prefix: string
  createdAt: string
  expiresAt: string | null
  revokedAt: string | null
}

/**
 * Members of accounts, their sessions, keys and invitations. Deleting a member deletes its sessions and keys
 * (the rows go: nothing can authenticate as a removed member).
 */
export interface MemberStore {
  /** Fails when the id or the email exists. */
  insert(member: MemberRecord): Promise<void>
  get(id: string): Promise<MemberRecord | undefined>
  getByEmail(email: string): Promise<MemberRecord | undefined>
  /** The member holding an OpenID Connect identity (issuer and `sub`). */
  getByOidc(issuer: string, subject: string): Promise<MemberRecord | undefined>
  /**
   * Records the member's OpenID Connect identity (and updatedAt) if they have none yet; false when unknown or
   * already linked. Fails when another member holds that identity.
   */
  linkOidc(id: string, issuer: string, subject: string, at: string): Promise<boolean>
  /** Oldest first. */
  list(accountId: string): Promise<MemberRecord[]>
  /** Sets the role (and updatedAt); false when the member is unknown. */
  setRole(id: string, role: Role, at: string): Promise<boolean>
  /** Sets the password hash (and updatedAt); false when the member is unknown. */
  setPassword(id: string, passwordHash: string, at: string): Promise<boolean>
  /** Deletes the member with its sessions and keys; false when unknown. */
  delete(id: string): Promise<boolean>

  insertSession(session: SessionRecord): Promise<void>
  findSession(tokenHash: string): Promise<SessionRecord | undefined>
  getSession(id: string): Promise<SessionRecord | undefined>
  /** Sets revokedAt once; false when unknown or already revoked. */
  revokeSession(id: string, at: string): Promise<boolean>
  /** Revokes every open session of a member but `exceptId`; returns how many. */
  revokeSessions(memberId: string, at: string, exceptId?: string): Promise<number>

  insertKey(key: MemberKeyRecord): Promise<void>
  findKey(hash: string): Promise<MemberKeyRecord | undefined>
  /** A member's keys, oldest first. */
  listKeys(memberId: string): Promise<MemberKeyRecord[]>
  revokeKey(id: string, at: string): Promise<boolean>

  insertInvitation(invitation: InvitationRecord): Promise<void>
  getInvitation(id: string): Promise<InvitationRecord | undefined>
  findInvitation(tokenHash: string): Promise<InvitationRecord | undefined>
  /** An account's invitations, oldest first. */
  listInvitations(accountId: string): Promise<InvitationRecord[]>
  /**
   * Marks the invitation used by `memberId`, only if it is still open (not accepted, not revoked, expiresAt
   * after `at`): true for exactly one caller however many race.
   */
  acceptInvitation(id: string, memberId: string, at: string): Promise<boolean>
  revokeInvitation(id: string, at: string): Promise<boolean>
}
