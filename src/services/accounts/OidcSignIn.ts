import { createHash } from 'node:crypto'
import * as oidc from 'openid-client'
import type { CreatedSession } from '../../contract/member.js'
import type { Clock } from '../../domain/clock.js'
import { DomainError } from '../../domain/errors.js'
import type { CounterStore } from '../../ratelimit/CounterStore.js'
import type { SecretBox } from '../SecretBox.js'
import type { Principal } from './AccountService.js'
import type { MemberService } from './MemberService.js'
import type { OidcConfig } from './membersConfig.js'

/** Where the provider sends the browser back, below the public URL (unless `redirectUrl` says otherwise). */
export const OIDC_CALLBACK_PATH = '/v2/sessions/oidc/callback'
/** How long a sign-in may take at the provider, from the click to the callback. */
export const OIDC_FLOW_MS = 10 * 60_000
const SEAL_CONTEXT = 'oidc-flow'

/** What the browser keeps between the start and the callback (sealed: it can neither read nor forge it). */
interface Flow {
  state: string
  nonce: string
  verifier: string
  /** The invitation being accepted by signing in with the provider. */
  invitation: string | null
  /** The member (and the session of theirs that started it) linking the provider's identity, instead of a sign-in. */
  link?: { memberId: string; sessionId: string }
  expiresAt: number
}

/**
 * Sign-in with an OpenID Connect provider: the authorization code flow with PKCE, by openid-client (which
 * reads the provider's discovery document and JWKS and checks the ID token: signature, iss, aud, exp, nonce).
 *
 * Who gets in: the member holding the provider's identity (issuer and `sub`), recorded when they joined
 * through the provider or linked it while signed in; or, with an invitation carried through the flow, a new
 * member of the invitation's account with the provider's (verified) email and identity. Never a member found by
 * email alone: an email typed when accepting an invitation with a password is nobody's proof, so a provider
 * vouching for it must not open that member to whoever holds it there (or, typed by an attacker, hand the
 * victim an account the attacker controls). A login at the provider alone never makes a member either: the
 * provider knows people, not which account they belong to.
 *
 * Linking: a member signed in (a session) starts the flow with `link`; the callback records the provider's
 * identity on them where the provider's verified email is theirs.
 *
 * The flow's state, nonce and PKCE verifier travel in a cookie sealed with the data dir's key, so whichever
 * replica the callback reaches can finish it, and only the browser that started it can; each state is used once
 * (a lease in the rate limits' counters, shared by replicas through Redis).
 */
export class OidcSignIn {
  private configuration: Promise<oidc.Configuration> | null = null

  constructor(
    private readonly deps: {
      settings: OidcConfig
      members: MemberService
      counters: CounterStore
      box: SecretBox
      clock: Clock
      /** The public URL, for the default redirect URL. */
      publicUrl: () => string
    },
  ) {
    checkOidcConfig(deps.settings)
  }

  /** The provider's name, for "Sign in with <name>". */
  get name(): string {
    return this.deps.settings.name
  }

  /** The redirect URL registered at the provider. */
  redirectUrl(): string {
    return this.deps.settings.redirectUrl ?? this.deps.publicUrl() + OIDC_CALLBACK_PATH
  }

  /**
   * Starts a sign-in: the provider's authorization URL to send the browser to, and the sealed flow for the
   * browser to keep. With `invitation`, signing in accepts it (checked now, so a dead link fails before the
   * provider is asked). With `link` (a member's session), the callback links the identity instead of signing in.
   */
  async start(invitation?: string, link?: Principal): Promise<{ authorizationUrl: string; flow: string }> {
    if (invitation !== undefined) await this.deps.members.preview(invitation)
    if (link && !link.member?.sessionId)
      throw new DomainError('forbidden', `a member signed in (a session) links ${this.name}, not a key`)
    const config = await this.provider()
    const flow: Flow = {
      state: oidc.randomState(),
      nonce: oidc.randomNonce(),
      verifier: oidc.randomPKCECodeVerifier(),
      invitation: invitation ?? null,
      ...(link ? { link: { memberId: link.member!.id, sessionId: link.member!.sessionId! } } : {}),
      expiresAt: this.deps.clock.now() + OIDC_FLOW_MS,
    }
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: this.redirectUrl(),
      scope: this.deps.settings.scopes,
      code_challenge: await oidc.calculatePKCECodeChallenge(flow.verifier),
      code_challenge_method: 'S256',
      state: flow.state,
      nonce: flow.nonce,
    })
    return { authorizationUrl: url.href, flow: this.deps.box.seal(JSON.stringify(flow), SEAL_CONTEXT) }
  }

  /**
   * Finishes a sign-in at the callback: `query` is the callback's query string, `sealed` the flow the browser
   * kept. Answers the same session a password sign-in gives (no session where the flow linked the identity to
   * the member who started it), or throws 403 (409) saying what was refused.
   * `onRefusedMember` hears of a refusal naming a member's email (an unverified one), for the audit log.
   */
  async finish(
    query: string,
    sealed: string | undefined,
    opts: { ip: string | null; onRefusedMember?: (p: Principal) => void },
  ): Promise<{ session?: CreatedSession; principal: Principal }> {
    const flow = this.openFlow(sealed)
    const callback = new URL(this.redirectUrl())
    callback.search = query
    // openid-client checks the state too; checked here first so that a forged callback costs no token request
    // and cannot use up the browser's flow.
    if (callback.searchParams.get('state') !== flow.state)
      throw refused('state: the callback is not the one this browser started (cross-site request?)')
    // Once per flow, on every replica: a callback replayed (from a log, the history) is refused.
    const lease = await this.deps.counters.acquire(
      `oidc:flow:${createHash('sha256').update(flow.state).digest('base64url')}`,
      1,
      OIDC_FLOW_MS + 60_000,
      this.deps.clock.now(),
    )
    if (!lease) throw refused('this sign-in was finished already: start again')
    const config = await this.provider()
    let claims: oidc.IDToken
    try {
      const tokens = await oidc.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
        idTokenExpected: true,
      })
      claims = tokens.claims()!
    } catch (err) {
      throw refused(`the provider's answer was refused: ${reasons(err)}`)
    }
    // openid-client checks azp only where aud names several audiences; OIDC Core 3.1.3.7 (5): an azp present names
    // the client the token was issued to, and a token issued to another client is not a sign-in at Hangar.
    if (claims.azp !== undefined && claims.azp !== this.deps.settings.clientId)
      throw refused(`the ID token was issued to another client (azp ${JSON.stringify(claims.azp)})`)
    const { emailClaim, requireVerifiedEmail } = this.deps.settings
    const email = claims[emailClaim]
    if (typeof email !== 'string' || !/^[^@\s]+@[^@\s]+$/.test(email) || email.length > 254)
      throw refused(`the ID token's ${emailClaim} claim is not an email`)
    if (requireVerifiedEmail && claims.email_verified !== true) {
      const member = await this.deps.members.principalOf(email)
      if (member) opts.onRefusedMember?.(member)
      throw refused(`${email} is not verified at ${this.name}: verify it there, then sign in again`)
    }
    // openid-client checked iss against the provider's discovery document; sub is required in every ID token.
    const identity = { issuer: claims.iss, subject: claims.sub, provider: this.name }
    if (flow.link) return this.deps.members.linkVerified(flow.link.memberId, flow.link.sessionId, identity, email)
    if (flow.invitation) {
      const name = typeof claims.name === 'string' ? claims.name.slice(0, 128) : null
      return this.deps.members.acceptVerified(flow.invitation, email, name, identity, opts.ip)
    }
    return this.deps.members.signInVerified(identity, email, opts.ip)
  }

  /** Whether the browser's flow links the provider (its callback ends on the members page, where linking started). */
  linking(sealed: string | undefined): boolean {
    try {
      return this.openFlow(sealed).link !== undefined
    } catch {
      return false
    }
  }

  private openFlow(sealed: string | undefined): Flow {
    if (!sealed) throw refused('this browser did not start this sign-in (no sign-in cookie): start again')
    let flow: Flow
    try {
      flow = JSON.parse(this.deps.box.open(sealed, SEAL_CONTEXT)) as Flow
    } catch {
      throw refused('the sign-in cookie is not one this server made: start again')
    }
    if (flow.expiresAt <= this.deps.clock.now()) throw refused('this sign-in took longer than 10 minutes: start again')
    return flow
  }

  /** The provider's configuration, read once (again after a failure: a provider down at first use recovers). */
  private provider(): Promise<oidc.Configuration> {
    if (!this.configuration) {
      const { issuer, clientId, clientSecret } = this.deps.settings
      const url = new URL(issuer)
      this.configuration = oidc
        .discovery(url, clientId, undefined, oidc.ClientSecretBasic(clientSecret), {
          // The ID token comes straight from the token endpoint, but its signature is checked against the JWKS
          // all the same: a loopback issuer has no TLS to vouch for it, and a checked signature costs little.
          execute: [oidc.enableNonRepudiationChecks, ...(url.protocol === 'http:' ? [oidc.allowInsecureRequests] : [])],
          timeout: 10,
        })
        .catch((err: Error) => {
          this.configuration = null
          throw new DomainError(
            'unavailable',
            `${this.name} (${issuer}) could not be reached for its OpenID configuration: ${err.message}`,
          )
        })
    }
    return this.configuration
  }
}

/** Refuses settings no sign-in could work with (or work safely with); main.ts calls it before opening anything. */
export function checkOidcConfig(settings: OidcConfig): void {
  const issuer = new URL(settings.issuer)
  if (issuer.protocol === 'http:' && !isLoopback(issuer.hostname))
    throw new Error(
      `members.oidc.issuer: ${settings.issuer} is plain http on a host that is not loopback; an issuer must be https (ID tokens and the JWKS would travel unprotected)`,
    )
  if (!settings.scopes.split(/\s+/).includes('openid'))
    throw new Error(`members.oidc.scopes: "${settings.scopes}" lacks openid`)
}

function refused(detail: string): DomainError {
  return new DomainError('forbidden', `OIDC sign-in refused: ${detail}`)
}

/** An error's message with those of its causes (openid-client says "invalid response"; its cause says which claim). */
function reasons(err: unknown): string {
  const out: string[] = []
  for (let e = err; e instanceof Error && out.length < 4; e = e.cause) if (!out.includes(e.message)) out.push(e.message)
  return out.join(': ')
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '[::1]' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host)
}
