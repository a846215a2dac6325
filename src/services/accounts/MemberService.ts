import { randomBytes } from 'node:crypto'
import type {
  AcceptInvitation,
  CreatedInvitation,
  CreatedMemberKey,
  CreatedSession,
  CreateInvitation,
  CreateMemberKey,
  Invitation,
  InvitationPreview,
  Me,
  Member,
  MemberKey,
} from '../../contract/member.js'
import { iso, type Clock } from '../../domain/clock.js'
import { DomainError, notFound } from '../../domain/errors.js'
import { newId } from '../../domain/ids.js'
import { decoyHash, hashPassword, verifyPassword } from '../../domain/members/password.js'
import { ROLE_GRANTS, within, type Permission, type Role } from '../../domain/members/roles.js'
import type { InvitationRecord, MemberRecord } from '../../store/MemberStore.js'
import type { Store } from '../../store/Store.js'
import { ADMIN_ACCOUNT, type Principal } from './AccountService.js'
import { invitationView, keyView, memberView, sameHash, sha256 } from './memberViews.js'

/** What a principal carries when a member (a session or a member's own key) is calling. */
export interface MemberPrincipal {
  id: string
  /** The member's role now (read at each request: a change applies at once). */
  role: Role
  /** What this caller may do: the role's grants, narrowed to a member key's own role. */
  grants: ReadonlySet<Permission>
  /** Only an owner's session (or owner key) may make or change owners. */
  owner: boolean
  /** The session presented; null for a member key. */
  sessionId: string | null
}

/** Who an OpenID Connect provider signed in: its issuer and `sub` (stable at the provider, unlike an email). */
export interface OidcIdentity {
  issuer: string
  subject: string
  /** The provider's name, for messages. */
  provider: string
}

const SESSION_PREFIX = 'hs_'
const MEMBER_KEY_PREFIX = 'hm_'
/** Sessions end 12 hours after sign-in (an absolute limit: a stolen token is not kept alive by use). */
const SESSION_MS = 12 * 3600_000

/**
 * Members of accounts: sign-in and sessions, members' own keys, roles and invitations by link. Tokens and
 * keys are random and stored as sha256; passwords as scrypt hashes (domain/members/password.ts).
 */
export class MemberService {
  constructor(
    private readonly deps: {
      store: Store
      clock: Clock
      sessionMs?: number
    },
  ) {}

  /** Whether `presented` is a session token or a member key (the rest are the account's API keys). */
  static owns(presented: string): boolean {
    return presented.startsWith(SESSION_PREFIX) || presented.startsWith(MEMBER_KEY_PREFIX)
  }

  /** The principal of a session token or member key, or undefined when it is not one (unknown, ended). */
  async authenticate(presented: string): Promise<{ principal?: Principal; reason: string }> {
    const { store } = this.deps
    const hash = sha256(presented)
    const now = this.deps.clock.now()
    if (presented.startsWith(SESSION_PREFIX)) {
      const s = await store.members.findSession(hash)
      if (!s || !sameHash(s.tokenHash, hash)) return { reason: 'unknown session' }
      if (s.revokedAt) return { reason: 'session was signed out' }
      if (Date.parse(s.expiresAt) <= now) return { reason: 'session has expired: sign in again' }
      const m = await store.members.get(s.memberId)
      if (!m) return { reason: 'unknown session' }
      return { principal: await this.principal(m, { keyRole: null, credentialId: s.id, sessionId: s.id }), reason: '' }
    }
    const k = await store.members.findKey(hash)
    if (!k || !sameHash(k.hash, hash)) return { reason: 'unknown API key' }
    if (k.revokedAt) return { reason: 'API key was revoked' }
    if (k.expiresAt && Date.parse(k.expiresAt) <= now) return { reason: 'API key has expired' }
    const m = await store.members.get(k.memberId)
    if (!m) return { reason: 'unknown API key' }
    return { principal: await this.principal(m, { keyRole: k.role, credentialId: k.id, sessionId: null }), reason: '' }
  }

  /**
   * The principal of a member's credential by its id (a session, or one of the member's keys), as it is now: what
   * a pod's link opened by that credential may still do. Undefined when the member is gone or the credential
   * was signed out, revoked or has expired.
   */
  async byCredential(memberId: string, credentialId: string, session: boolean): Promise<Principal | undefined> {
    const { store } = this.deps
    const m = await store.members.get(memberId)
    if (!m) return undefined
    const now = this.deps.clock.now()
    if (session) {
      const s = await store.members.getSession(credentialId)
      if (!s || s.memberId !== m.id || s.revokedAt || Date.parse(s.expiresAt) <= now) return undefined
      return this.principal(m, { keyRole: null, credentialId, sessionId: credentialId })
    }
    const k = (await store.members.listKeys(m.id)).find((x) => x.id === credentialId)
    if (!k || k.revokedAt || (k.expiresAt && Date.parse(k.expiresAt) <= now)) return undefined
    return this.principal(m, { keyRole: k.role, credentialId, sessionId: null })
  }

  /**
   * Signs a member in with email and password: a new session (never one the client names, so no session can be
   * fixed in advance). Unknown emails cost a scrypt like wrong passwords, and both get the same answer.
   * `onRefusedMember` hears of a wrong password for a known member (for the audit log).
   */
  async signIn(
    email: string,
    password: string,
    opts: { ip: string | null; onRefusedMember?: (p: Principal) => void },
  ): Promise<{ session: CreatedSession; principal: Principal }> {
    const m = await this.deps.store.members.getByEmail(email.trim().toLowerCase())
    const ok = await verifyPassword(password, m?.passwordHash ?? (await decoyHash()))
    if (!m || !ok) {
      if (m)
        opts.onRefusedMember?.(await this.principal(m, { keyRole: null, credentialId: 'sign-in', sessionId: null }))
      throw new DomainError('unauthorized', 'email or password is wrong')
    }
    return this.startSession(m, opts.ip)
  }

  /** Ends the session presented. */
  async signOut(p: Principal): Promise<void> {
    const sessionId = p.member?.sessionId
    if (!sessionId) throw new DomainError('bad_request', 'only a session can sign out; revoke a key instead')
    await this.deps.store.members.revokeSession(sessionId, this.now())
  }

  async me(p: Principal): Promise<Me> {
    const member = p.member ? await this.deps.store.members.get(p.member.id) : undefined
    const grants = p.member
      ? [...p.member.grants]
      : [...ROLE_GRANTS[p.permission === 'ALL' ? 'owner' : p.permission === 'READ_ONLY' ? 'read-only' : 'billing']]
    return {
      kind: p.member ? 'member' : 'key',
      accountId: p.accountId,
      member: member ? memberView(member) : null,
      permissions: p.member ? grants : p.permission === 'RESTRICTED' ? [] : grants,
      admin: p.admin,
    }
  }

  async changePassword(p: Principal, current: string, next: string): Promise<void> {
    const m = await this.self(p)
    if (!(await verifyPassword(current, m.passwordHash)))
      throw new DomainError('forbidden', 'currentPassword: is not the current password')
    // Other sessions end (someone who knew the old password may hold one); this one and the member's keys stay.
    await this.deps.store.members.setPassword(m.id, await hashPassword(next), this.now())
    await this.deps.store.members.revokeSessions(m.id, this.now(), p.member?.sessionId ?? undefined)
  }

  /** Issues a key for the calling member, carrying at most the caller's own role. */
  async createKey(p: Principal, body: CreateMemberKey): Promise<CreatedMemberKey> {
    const m = await this.self(p)
    // A key minting keys would outlive its own expiry and revocation (a leaked key keeping a foothold).
    if (!p.member!.sessionId)
      throw new DomainError('forbidden', 'keys are issued by a member signed in (a session), not by another key')
    const role = body.role ?? m.role
    const missing = [...ROLE_GRANTS[role]].filter((g) => !p.member!.grants.has(g))
    if (missing.length || (role === 'owner' && !p.member!.owner))
      throw new DomainError(
        'forbidden',
        `role: a key cannot carry more than its member: ${role} needs ${missing.length ? missing.join(', ') : 'an owner'}, which this ${p.member!.sessionId ? 'session' : 'key'} (role ${m.role}) does not hold`,
        [`role: at most ${m.role}`],
      )
    if (body.expiresAt && Date.parse(body.expiresAt) <= this.deps.clock.now())
      throw new DomainError('bad_request', `expiresAt: ${body.expiresAt} is in the past`, [
        'expiresAt: must be in the future',
      ])
    const key = MEMBER_KEY_PREFIX + randomBytes(24).toString('base64url')
    const record = {
      id: newId('mkey_'),
      memberId: m.id,
      accountId: m.accountId,
      name: body.name ?? null,
      role,
      hash: sha256(key),
      prefix: key.slice(0, MEMBER_KEY_PREFIX.length + 4),
      createdAt: this.now(),
      expiresAt: body.expiresAt ?? null,
      revokedAt: null,
    }
    await this.deps.store.members.insertKey(record)
    return { ...keyView(record), key }
  }

  async listKeys(p: Principal): Promise<MemberKey[]> {
    return (await this.deps.store.members.listKeys((await this.self(p)).id)).map(keyView)
  }

  async revokeKey(p: Principal, id: string): Promise<MemberKey> {
    const m = await this.self(p)
    const key = (await this.deps.store.members.listKeys(m.id)).find((k) => k.id === id)
    if (!key) throw notFound('key', id)
    await this.deps.store.members.revokeKey(id, this.now())
    return keyView({ ...key, revokedAt: key.revokedAt ?? this.now() })
  }

  async list(p: Principal): Promise<Member[]> {
    return (await this.deps.store.members.list(p.accountId)).map(memberView)
  }

  /** Changes a member's role. Nobody changes their own; only owners touch owners; the last owner stays one. */
  async setRole(p: Principal, id: string, role: Role): Promise<Member> {
    const target = await this.ofAccount(p, id)
    if (p.member?.id === target.id) throw new DomainError('forbidden', 'a member cannot change their own role')
    this.mayGive(p, role, 'role')
    if (target.role === 'owner' && !isOwner(p))
      throw new DomainError('forbidden', `member ${target.id} is an owner: only an owner can change an owner's role`)
    if (target.role === 'owner' && role !== 'owner') await this.keepAnOwner(target)
    await this.deps.store.members.setRole(target.id, role, this.now())
    await this.endInvitationsBy(target.accountId, target.id, role)
    return memberView((await this.deps.store.members.get(target.id))!)
  }

  /** Removes a member with their sessions and keys (a member may leave; the last owner may not). */
  async remove(p: Principal, id: string): Promise<void> {
    const target = await this.ofAccount(p, id)
    if (target.role === 'owner' && !isOwner(p))
      throw new DomainError('forbidden', `member ${target.id} is an owner: only an owner can remove an owner`)
    if (target.role === 'owner') await this.keepAnOwner(target)
    await this.deps.store.members.delete(target.id)
    await this.endInvitationsBy(target.accountId, target.id)
  }

  async invite(p: Principal, body: CreateInvitation): Promise<CreatedInvitation> {
    let accountId = p.accountId
    if (body.account !== undefined) {
      if (!p.admin) throw new DomainError('forbidden', 'account: only an admin key invites to another account')
      const a =
        (await this.deps.store.accounts.get(body.account)) ?? (await this.deps.store.accounts.getByName(body.account))
      if (!a) throw notFound('account', body.account)
      accountId = a.id
    }
    // The admin account is the operator's: its workloads run outside the sandbox (trusted), so a member there
    // would hold the host. Members belong to tenant accounts only.
    if ((await this.deps.store.accounts.get(accountId))?.name === ADMIN_ACCOUNT)
      throw new DomainError(
        'forbidden',
        `account: the ${ADMIN_ACCOUNT} account takes no members (its workloads run unsandboxed); name a tenant account in "account"`,
        ['account: a tenant account, not admin'],
      )
    this.mayGive(p, body.role, 'role')
    const token = randomBytes(24).toString('base64url')
    const now = this.deps.clock.now()
    const record: InvitationRecord = {
      id: newId('inv_'),
      accountId,
      role: body.role,
      createdBy: p.member?.id ?? p.keyId,
      tokenHash: sha256(token),
      createdAt: iso(now),
      expiresAt: iso(now + (body.expiresInHours ?? 72) * 3600_000),
      acceptedAt: null,
      memberId: null,
      revokedAt: null,
    }
    await this.deps.store.members.insertInvitation(record)
    // In the fragment: browsers do not send it, so the token stays out of every request log on the way.
    const url = `/console/invite#${token}`
    return { ...invitationView(record), token, url }
  }

  /**
   * Revokes the open invitations that `createdBy` (a member or an account's key) made in the account, or only
   * those offering more than `limit`: a link outlives no one, and offers no more than its maker may give now.
   */
  async endInvitationsBy(accountId: string, createdBy: string, limit?: Role): Promise<void> {
    for (const inv of await this.deps.store.members.listInvitations(accountId))
      if (inv.createdBy === createdBy && !inv.acceptedAt && !inv.revokedAt && !(limit && within(inv.role, limit)))
        await this.deps.store.members.revokeInvitation(inv.id, this.now())
  }

  async invitations(p: Principal): Promise<Invitation[]> {
    return (await this.deps.store.members.listInvitations(p.accountId)).map(invitationView)
  }

  async revokeInvitation(p: Principal, id: string): Promise<void> {
    const inv = await this.deps.store.members.getInvitation(id)
    if (!inv || inv.accountId !== p.accountId) throw notFound('invitation', id)
    if (!(await this.deps.store.members.revokeInvitation(id, this.now())))
      throw new DomainError('conflict', `invitation ${id} was already ${inv.acceptedAt ? 'accepted' : 'revoked'}`)
  }

  /** What an invitation offers, for the invitee's page; 404 for any token that cannot be accepted. */
  async preview(token: string): Promise<InvitationPreview> {
    const inv = await this.openInvitation(token)
    const account = await this.deps.store.accounts.get(inv.accountId)
    return { accountName: account?.name ?? inv.accountId, role: inv.role, expiresAt: inv.expiresAt }
  }

  /** Accepts an invitation once: makes the member with the password given and signs them in. */
  async accept(body: AcceptInvitation, ip: string | null): Promise<{ session: CreatedSession; principal: Principal }> {
    const inv = await this.openInvitation(body.token)
    return this.join(inv, body.email, body.name ?? null, await hashPassword(body.password), ip)
  }

  /**
   * Accepts an invitation as the person an identity provider signed in (OIDC sign-in): the member is made with
   * the provider's email and identity, which they sign in with from then on; they have no password of their own
   * (a random one nobody knows is hashed in its place).
   */
  async acceptVerified(
    token: string,
    email: string,
    name: string | null,
    identity: OidcIdentity,
    ip: string | null,
  ): Promise<{ session: CreatedSession; principal: Principal }> {
    const inv = await this.openInvitation(token)
    if (await this.deps.store.members.getByOidc(identity.issuer, identity.subject))
      throw new DomainError('conflict', `this ${identity.provider} identity is already a member's: sign in instead`)
    return this.join(inv, email, name, await hashPassword(randomBytes(32).toString('base64url')), ip, identity)
  }

  /**
   * Signs in the member holding the identity a provider vouched for (OIDC sign-in); 403 when none holds it.
   * Never by email alone: the email of a member who accepted an invitation with a password was typed, not proved,
   * so whoever holds it at the provider is not necessarily that member (an account pre-hijacked by the typist).
   */
  async signInVerified(
    identity: OidcIdentity,
    email: string,
    ip: string | null,
  ): Promise<{ session: CreatedSession; principal: Principal }> {
    const m = await this.deps.store.members.getByOidc(identity.issuer, identity.subject)
    if (m) return this.startSession(m, ip)
    // The person proved this email to the provider, so saying whether it is a member's tells them nothing of others.
    const byEmail = await this.deps.store.members.getByEmail(email.trim().toLowerCase())
    if (byEmail?.oidcSubject)
      throw new DomainError(
        'forbidden',
        `${email} is a member's email, linked to another ${identity.provider} identity than the one you signed in as`,
      )
    if (byEmail)
      throw new DomainError(
        'forbidden',
        `${email} is a member's email, but no sign-in with ${identity.provider} is linked to it: sign in with your password, then link ${identity.provider} from your account page`,
      )
    throw new DomainError(
      'forbidden',
      `${email} is no member's email: ask an owner or admin of your account for an invitation`,
    )
  }

  /**
   * Links the identity a provider vouched for to the member whose session started the flow: only where the
   * provider's (verified) email is the member's, the member has no identity yet and no other member holds this
   * one. The session must still be open (one signed out meanwhile links nothing).
   */
  async linkVerified(
    memberId: string,
    sessionId: string,
    identity: OidcIdentity,
    email: string,
  ): Promise<{ principal: Principal }> {
    const principal = await this.byCredential(memberId, sessionId, true)
    const m = principal && (await this.deps.store.members.get(memberId))
    if (!principal || !m)
      throw new DomainError('forbidden', 'the session that started linking has ended: sign in again')
    const linked = `${identity.provider} is linked already`
    if (m.oidcIssuer === identity.issuer && m.oidcSubject === identity.subject) return { principal }
    if (m.oidcSubject) throw new DomainError('conflict', `${linked} to this member, as another identity`)
    if (email.trim().toLowerCase() !== m.email)
      throw new DomainError(
        'forbidden',
        `${identity.provider} signed you in as ${email}, not as this member's email (${m.email}): sign in there with ${m.email}`,
      )
    const taken = () => new DomainError('conflict', `this ${identity.provider} identity is linked to another member`)
    if (await this.deps.store.members.getByOidc(identity.issuer, identity.subject)) throw taken()
    try {
      if (!(await this.deps.store.members.linkOidc(m.id, identity.issuer, identity.subject, this.now())))
        throw new DomainError('conflict', `${linked} to this member`)
    } catch (err) {
      // Another member linked it between the check and the update (the identity is unique).
      if (!(err instanceof DomainError) && (await this.deps.store.members.getByOidc(identity.issuer, identity.subject)))
        throw taken()
      throw err
    }
    return { principal }
  }

  /** The principal of the member with `email`, if any: the actor of a refused OIDC sign-in in the audit log. */
  async principalOf(email: string): Promise<Principal | undefined> {
    const m = await this.deps.store.members.getByEmail(email.trim().toLowerCase())
    return m ? this.principal(m, { keyRole: null, credentialId: 'sign-in', sessionId: null }) : undefined
  }

  /** The invitation's member made with `email` and signed in, in one transaction with the invitation's use. */
  private async join(
    inv: InvitationRecord,
    rawEmail: string,
    name: string | null,
    passwordHash: string,
    ip: string | null,
    identity: OidcIdentity | null = null,
  ): Promise<{ session: CreatedSession; principal: Principal }> {
    const email = rawEmail.trim().toLowerCase()
    const taken = () => new DomainError('conflict', `email: ${email} is already a member's; sign in instead`)
    if (await this.deps.store.members.getByEmail(email)) throw taken()
    const now = this.now()
    const member: MemberRecord = {
      id: newId('mem_'),
      accountId: inv.accountId,
      email,
      name,
      role: inv.role,
      passwordHash,
      oidcIssuer: identity?.issuer ?? null,
      oidcSubject: identity?.subject ?? null,
      createdAt: now,
      updatedAt: now,
    }
    // One transaction: the invitation is used by exactly this member, or no member is made.
    try {
      await this.deps.store.transaction(async (tx) => {
        if (!(await tx.members.acceptInvitation(inv.id, member.id, now)))
          throw new DomainError('not_found', 'this invitation was used, revoked or has expired')
        await tx.members.insert(member)
      })
    } catch (err) {
      // Another invitation accepted with this email (or identity) between the check and the insert (both unique).
      if (!(err instanceof DomainError) && (await this.deps.store.members.getByEmail(email))) throw taken()
      if (
        !(err instanceof DomainError) &&
        identity &&
        (await this.deps.store.members.getByOidc(identity.issuer, identity.subject))
      )
        throw new DomainError('conflict', `this ${identity.provider} identity is already a member's: sign in instead`)
      throw err
    }
    return this.startSession(member, ip)
  }

  private async openInvitation(token: string): Promise<InvitationRecord> {
    const inv = await this.deps.store.members.findInvitation(sha256(token))
    if (!inv || inv.acceptedAt || inv.revokedAt || Date.parse(inv.expiresAt) <= this.deps.clock.now())
      throw new DomainError('not_found', 'this invitation was used, revoked or has expired')
    return inv
  }

  private async startSession(m: MemberRecord, ip: string | null) {
    const token = SESSION_PREFIX + randomBytes(32).toString('base64url')
    const now = this.deps.clock.now()
    const session = {
      id: newId('ses_'),
      memberId: m.id,
      accountId: m.accountId,
      tokenHash: sha256(token),
      createdAt: iso(now),
      expiresAt: iso(now + (this.deps.sessionMs ?? SESSION_MS)),
      revokedAt: null,
      ip,
    }
    await this.deps.store.members.insertSession(session)
    const principal = await this.principal(m, { keyRole: null, credentialId: session.id, sessionId: session.id })
    return { session: { token, expiresAt: session.expiresAt, member: memberView(m) }, principal }
  }

  private async principal(
    m: MemberRecord,
    c: { keyRole: Role | null; credentialId: string; sessionId: string | null },
  ): Promise<Principal> {
    const grants = new Set(ROLE_GRANTS[m.role])
    if (c.keyRole) for (const g of grants) if (!ROLE_GRANTS[c.keyRole].has(g)) grants.delete(g)
    const account = await this.deps.store.accounts.get(m.accountId)
    return {
      accountId: m.accountId,
      keyId: c.credentialId,
      // What the routes that look at a key's permission (pod proxy, load balancer) see: billing reaches no endpoint.
      permission: grants.has('workloads.write') ? 'ALL' : grants.has('workloads.read') ? 'READ_ONLY' : 'RESTRICTED',
      endpointIds: [],
      admin: false,
      rateLimitExempt: account?.rateLimitExempt ?? false,
      member: {
        id: m.id,
        role: m.role,
        grants,
        owner: m.role === 'owner' && (c.keyRole === null || c.keyRole === 'owner'),
        sessionId: c.sessionId,
      },
    }
  }

  /** Refuses to give `role` (in an invitation or a role change) beyond what the caller holds. */
  private mayGive(p: Principal, role: Role, field: string): void {
    if (role === 'owner' && !isOwner(p))
      throw new DomainError('forbidden', `${field}: only an owner can make an owner`, [`${field}: at most admin`])
    const held = p.member ? p.member.grants : ROLE_GRANTS[p.permission === 'ALL' ? 'owner' : 'read-only']
    const missing = [...ROLE_GRANTS[role]].filter((g) => !held.has(g))
    if (missing.length)
      throw new DomainError('forbidden', `${field}: ${role} holds ${missing.join(', ')}, which the caller does not`, [
        `${field}: at most the caller's own role`,
      ])
  }

  private async keepAnOwner(target: MemberRecord): Promise<void> {
    const owners = (await this.deps.store.members.list(target.accountId)).filter((m) => m.role === 'owner')
    if (owners.length <= 1)
      throw new DomainError('conflict', `member ${target.id} is the account's last owner: make another owner first`)
  }

  private async ofAccount(p: Principal, id: string): Promise<MemberRecord> {
    const m = await this.deps.store.members.get(id)
    // Another account's member is "not found", as for every other resource.
    if (!m || m.accountId !== p.accountId) throw notFound('member', id)
    return m
  }

  private async self(p: Principal): Promise<MemberRecord> {
    const m = p.member ? await this.deps.store.members.get(p.member.id) : undefined
    if (!m)
      throw new DomainError('forbidden', 'this route is for members signed in (an API key of the account is no member)')
    return m
  }

  private now(): string {
    return iso(this.deps.clock.now())
  }
}

/** An owner's session or key, or an account's ALL key (which stands for the account as a whole). */
function isOwner(p: Principal): boolean {
  return p.member ? p.member.owner : p.permission === 'ALL'
}
