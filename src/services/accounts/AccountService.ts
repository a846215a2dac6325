import type { ChangeFeed } from '../../replicas/ChangeFeed.js'
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { Account, ApiKey, CreateAccount, CreateApiKey, CreatedApiKey } from '../../contract/admin.js'
import { iso, type Clock } from '../../domain/clock.js'
import { DomainError, notFound } from '../../domain/errors.js'
import { newId } from '../../domain/ids.js'
import type { AccountRecord, ApiKeyRecord, Store } from '../../store/Store.js'
import type { LinkHolder } from '../pods/PodLinks.js'
import { MemberService, type MemberPrincipal } from './MemberService.js'

/** Who is calling, as established from a valid API key. */
export interface Principal {
  accountId: string
  keyId: string
  permission: ApiKeyRecord['permission']
  endpointIds: string[]
  admin: boolean
  rateLimitExempt: boolean
  /** Present when a member is calling (a session or the member's own key): its role decides, not `permission`. */
  member?: MemberPrincipal
}

export const ADMIN_ACCOUNT = 'admin'
const KEY_PREFIX = 'hk_'
/** How long an authenticated key is trusted from memory before the store is asked again. */
const CACHE_MS = 5_000

/** Accounts, API keys and authentication. Keys are stored as sha256 hashes only. */
export class AccountService {
  /** Recent authentications by the key as presented (memory only, like the request itself). */
  private readonly cache = new Map<string, { principal: Principal | null; reason: string; at: number }>()

  /**
   * `feed` (several control-plane processes): a revocation made on another process clears this cache too,
   * so a revoked key stops working everywhere at once rather than after CACHE_MS.
   */
  /** Members of accounts: sessions, members' keys and invitations (their tokens are authenticated here too). */
  readonly members: MemberService

  constructor(private readonly deps: { store: Store; clock: Clock; feed?: ChangeFeed }) {
    deps.feed?.on('keys.revoked', () => this.cache.clear())
    this.members = new MemberService({ store: deps.store, clock: deps.clock })
  }

  /**
   * Makes sure the admin account and an admin key exist. Returns the new key when one was created
   * (generated, or `presetKey` when given); null when an admin key already existed.
   */
  async bootstrap(presetKey?: string): Promise<string | null> {
    const { store } = this.deps
    let admin = await store.accounts.getByName(ADMIN_ACCOUNT)
    if (!admin) {
      admin = { id: newId('acc_'), name: ADMIN_ACCOUNT, rateLimitExempt: true, createdAt: this.now() }
      await store.accounts.insert(admin)
    }
    if (presetKey) {
      if (await store.apiKeys.findByHash(hashKey(presetKey))) return null
      await this.insertKey(admin, { permission: 'ALL', admin: true, name: 'admin (HANGAR_ADMIN_API_KEY)' }, presetKey)
      return presetKey
    }
    const keys = await store.apiKeys.list(admin.id)
    if (keys.some((k) => k.admin && !k.revokedAt)) return null
    return (await this.insertKey(admin, { permission: 'ALL', admin: true, name: 'admin' })).key
  }

  async createAccount(body: CreateAccount): Promise<Account> {
    if (await this.deps.store.accounts.getByName(body.name))
      throw new DomainError('conflict', `an account named ${JSON.stringify(body.name)} already exists`)
    const account: AccountRecord = {
      id: newId('acc_'),
      name: body.name,
      rateLimitExempt: body.rateLimitExempt ?? false,
      createdAt: this.now(),
    }
    await this.deps.store.accounts.insert(account)
    return account
  }

  listAccounts(): Promise<Account[]> {
    return this.deps.store.accounts.list()
  }

  /** Finds an account by id or name. */
  async account(ref: string): Promise<AccountRecord> {
    const a = (await this.deps.store.accounts.get(ref)) ?? (await this.deps.store.accounts.getByName(ref))
    if (!a) throw notFound('account', ref)
    return a
  }

  async createKey(body: CreateApiKey): Promise<CreatedApiKey> {
    const account = await this.account(body.account)
    const endpointIds = body.endpointIds ?? []
    if (body.permission === 'RESTRICTED' && endpointIds.length === 0) {
      throw new DomainError('bad_request', 'endpointIds: a RESTRICTED key needs at least one endpoint id', [
        'endpointIds: required with permission RESTRICTED',
      ])
    }
    if (body.permission !== 'RESTRICTED' && endpointIds.length > 0) {
      throw new DomainError(
        'bad_request',
        `endpointIds: only RESTRICTED keys are limited to endpoints, not ${body.permission}`,
        ['endpointIds: only valid with permission RESTRICTED'],
      )
    }
    // A key limited to endpoints it can never reach would be a key that can do nothing: refuse it now.
    const foreign: string[] = []
    for (const [i, id] of endpointIds.entries()) {
      const ep = await this.deps.store.endpoints.get(id)
      if (!ep || ep.accountId !== account.id)
        foreign.push(
          `endpointIds[${i}]: ${JSON.stringify(id)} is not an endpoint of account ${JSON.stringify(account.name)}; see /v2/serverless`,
        )
    }
    if (foreign.length)
      throw new DomainError(
        'bad_request',
        foreign.length === 1
          ? foreign[0]
          : `${foreign.length} endpoint ids are not endpoints of account ${JSON.stringify(account.name)}, listed in errors`,
        foreign,
      )
    if (body.expiresAt && Date.parse(body.expiresAt) <= this.deps.clock.now()) {
      throw new DomainError('bad_request', `expiresAt: ${body.expiresAt} is in the past`, [
        'expiresAt: must be in the future',
      ])
    }
    return this.insertKey(account, {
      permission: body.permission,
      endpointIds,
      name: body.name ?? null,
      expiresAt: body.expiresAt ?? null,
      admin: false,
    })
  }

  async listKeys(accountRef?: string): Promise<ApiKey[]> {
    const accountId = accountRef ? (await this.account(accountRef)).id : undefined
    const names = new Map((await this.deps.store.accounts.list()).map((a) => [a.id, a.name]))
    return (await this.deps.store.apiKeys.list(accountId)).map((k) => keyView(k, names.get(k.accountId) ?? ''))
  }

  async revokeKey(id: string): Promise<ApiKey> {
    const key = await this.deps.store.apiKeys.get(id)
    if (!key) throw notFound('API key', id)
    if (!key.revokedAt) await this.deps.store.apiKeys.revoke(id, this.now())
    // The invitations it made in its account end with it (an admin key's into other accounts stay: revoke them).
    await this.members.endInvitationsBy(key.accountId, key.id)
    this.cache.clear()
    this.deps.feed?.publish('keys.revoked')
    const account = await this.deps.store.accounts.get(key.accountId)
    return keyView((await this.deps.store.apiKeys.get(id))!, account?.name ?? '')
  }

  /**
   * Resolves a presented key to a principal, or throws 401 saying why (missing, malformed, unknown,
   * revoked or expired). Successful lookups are cached briefly; revocation clears the cache.
   */
  /**
   * The principal of a key authenticated less than CACHE_MS ago, with no promise (every request asks this
   * first); undefined when only `authenticate` can say (not seen lately, refused, or expired).
   */
  cachedPrincipal(presented: string): Principal | undefined {
    const hit = this.cache.get(presented)
    if (!hit?.principal) return undefined
    const now = this.deps.clock.now()
    return now - hit.at < CACHE_MS && !this.expired(hit.principal, now) ? hit.principal : undefined
  }

  async authenticate(presented: string | undefined): Promise<Principal> {
    if (!presented) throw unauthorized('missing API key: send Authorization: Bearer <key>')
    if (presented.length < 16 || !/^[\x21-\x7e]+$/.test(presented)) throw unauthorized('malformed API key')
    const now = this.deps.clock.now()
    // Sessions and members' keys are never cached: a sign-out, removal or role change applies to the next request.
    if (MemberService.owns(presented)) {
      const { principal, reason } = await this.members.authenticate(presented)
      if (principal) return principal
      // A preset admin key may begin like a member's token: it is still an API key.
      if (!(await this.deps.store.apiKeys.findByHash(hashKey(presented)))) throw unauthorized(reason)
    }
    // Keyed by the key as presented: a hit costs no sha256 (the hot path of every request).
    const hit = this.cache.get(presented)
    if (hit && now - hit.at < CACHE_MS && (!hit.principal || !this.expired(hit.principal, now))) {
      if (!hit.principal) throw unauthorized(hit.reason)
      return hit.principal
    }
    const hash = hashKey(presented)
    const record = await this.deps.store.apiKeys.findByHash(hash)
    // Compare in constant time even though the lookup was by hash, so timing says nothing about near misses.
    const ok = record && timingSafeEqual(Buffer.from(record.hash, 'hex'), Buffer.from(hash, 'hex'))
    const reason = ok ? keyEnded(record, now) : 'unknown API key'
    if (reason) {
      this.remember(presented, { principal: null, reason, at: now })
      throw unauthorized(reason)
    }
    const account = await this.deps.store.accounts.get(record!.accountId)
    const principal: Principal = {
      accountId: record!.accountId,
      keyId: record!.id,
      permission: record!.permission,
      endpointIds: record!.endpointIds,
      admin: record!.admin,
      rateLimitExempt: record!.admin || (account?.rateLimitExempt ?? false),
    }
    this.expiry.set(principal, record!.expiresAt ? Date.parse(record!.expiresAt) : Infinity)
    this.remember(presented, { principal, reason: '', at: now })
    void this.deps.store.apiKeys.touch(record!.id, iso(now))
    return principal
  }

  /**
   * What a pod's link (PodLinks) may do now: no more than when it was opened, and nothing once the key, session or
   * member that opened it is revoked, signed out or removed; a member's demotion narrows it. 401 when it ended.
   */
  async linkHolder(link: LinkHolder): Promise<Principal> {
    const issued = link.principal
    let now: Principal | undefined
    if (link.member) now = await this.members.byCredential(link.member.id, issued.keyId, link.member.session)
    else {
      const k = await this.deps.store.apiKeys.get(issued.keyId)
      now = k && !keyEnded(k, this.deps.clock.now()) ? issued : undefined
    }
    if (!now)
      throw unauthorized(
        `the ${link.member ? (link.member.session ? 'session' : "member's key") : 'API key'} that opened this link has ended: open the pod's port again from the console`,
      )
    const rank = { RESTRICTED: 0, READ_ONLY: 1, ALL: 2 } as const
    return rank[now.permission] < rank[issued.permission] ? { ...issued, permission: now.permission } : issued
  }

  private readonly expiry = new WeakMap<Principal, number>()
  private expired(p: Principal, now: number): boolean {
    return (this.expiry.get(p) ?? Infinity) <= now
  }

  private remember(presented: string, entry: { principal: Principal | null; reason: string; at: number }) {
    if (this.cache.size > 10_000) this.cache.clear()
    this.cache.set(presented, entry)
  }

  private async insertKey(
    account: AccountRecord,
    opts: {
      permission: ApiKeyRecord['permission']
      admin: boolean
      name?: string | null
      endpointIds?: string[]
      expiresAt?: string | null
    },
    preset?: string,
  ): Promise<CreatedApiKey> {
    const key = preset ?? KEY_PREFIX + randomBytes(24).toString('base64url')
    const record: ApiKeyRecord = {
      id: newId('key_'),
      accountId: account.id,
      name: opts.name ?? null,
      hash: hashKey(key),
      // Enough to recognise a key, too little to matter: 4 random characters of a generated key, the last 4
      // of a chosen one (its start may be a guessable word).
      prefix: preset ? `…${key.slice(-4)}` : key.slice(0, KEY_PREFIX.length + 4),
      permission: opts.permission,
      endpointIds: opts.endpointIds ?? [],
      admin: opts.admin,
      expiresAt: opts.expiresAt ?? null,
      revokedAt: null,
      lastUsedAt: null,
      createdAt: this.now(),
    }
    await this.deps.store.apiKeys.insert(record)
    return { ...keyView(record, account.name), key }
  }

  private now(): string {
    return iso(this.deps.clock.now())
  }
}

export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex')
}

function keyView(k: ApiKeyRecord, accountName: string): ApiKey {
  const { hash: _hash, ...rest } = k
  return { ...rest, accountName }
}

function unauthorized(detail: string): DomainError {
  return new DomainError('unauthorized', detail)
}

/** Why a key no longer authenticates (revoked, or past its expiry at `now`); '' while it does. */
function keyEnded(k: Pick<ApiKeyRecord, 'revokedAt' | 'expiresAt'>, now: number): string {
  if (k.revokedAt) return 'API key was revoked'
  if (k.expiresAt && Date.parse(k.expiresAt) <= now) return 'API key has expired'
  return ''
}
