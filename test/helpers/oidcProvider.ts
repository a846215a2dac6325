import { createHash, createHmac, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect } from 'vitest'

/** The person the provider signs in (it approves every authorization request as them). */
export interface OidcUser {
  sub: string
  email: string
  email_verified: boolean
  name?: string
}

/** Ways to make the provider's ID token wrong, for attack tests (each test turns one on, then off for its control). */
export interface Tamper {
  /** The `aud` claim instead of the client id. */
  aud?: string
  /** Seconds added to now for `exp` (negative: expired already). */
  expInS?: number
  /** Sign with a key whose `kid` is not in the JWKS. */
  foreignKey?: boolean
  /** Sign with a key of its own under the JWKS key's `kid` (a forged signature). */
  forgedSignature?: boolean
  /** The `nonce` claim instead of the one asked for. */
  nonce?: string
  /** The `iss` claim instead of the issuer. */
  iss?: string
  /** Hand out the same code's tokens again (a provider that does not enforce single use). */
  reuseCodes?: boolean
  /** Claims set over the ID token's (a value of undefined removes the claim): `email_verified: 'true'`, `azp`. */
  claims?: Record<string, unknown>
  /** Sign with `none` (no signature) or HS256 keyed with the client secret instead of the JWKS key. */
  alg?: 'none' | 'HS256'
}

/**
 * A small OpenID Connect provider on a loopback port, for tests: discovery, a JWKS, /authorize (approves `user`
 * at once and redirects with code and state) and /token (client_secret_basic, PKCE S256, an RS256 ID token
 * signed with a key made for this run). Written with node:crypto, independently of the library Hangar verifies
 * with, so that a shared mistake cannot make both sides agree.
 */
export class TestOidcProvider {
  readonly clientId = 'hangar-test'
  readonly clientSecret = randomBytes(16).toString('hex')
  user: OidcUser = { sub: 'user-1', email: 'nobody@example.com', email_verified: true }
  tamper: Tamper = {}
  /** The redirect URI registered for the client (set once Hangar's address is known). */
  redirectUri = ''
  /** Token requests answered, and refused. */
  tokenRequests = 0
  private server!: Server
  private readonly key = generateKeyPairSync('rsa', { modulusLength: 2048 })
  private readonly otherKey = generateKeyPairSync('rsa', { modulusLength: 2048 })
  private readonly kid = randomBytes(6).toString('hex')
  private readonly codes = new Map<
    string,
    { nonce: string | null; challenge: string; redirectUri: string; user: OidcUser; used: boolean }
  >()

  get issuer(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      this.handle(req)
        .then(({ status, headers, body }) => {
          res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers })
          res.end(body === undefined ? undefined : JSON.stringify(body))
        })
        .catch((err: Error) => {
          res.writeHead(500).end(err.message)
        })
    })
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve))
    return this
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }

  private async handle(
    req: IncomingMessage,
  ): Promise<{ status: number; headers?: Record<string, string>; body?: unknown }> {
    const url = new URL(req.url ?? '/', this.issuer)
    if (req.method === 'GET' && url.pathname === '/.well-known/openid-configuration')
      return {
        status: 200,
        body: {
          issuer: this.issuer,
          authorization_endpoint: `${this.issuer}/authorize`,
          token_endpoint: `${this.issuer}/token`,
          jwks_uri: `${this.issuer}/jwks`,
          response_types_supported: ['code'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['RS256'],
          code_challenge_methods_supported: ['S256'],
          token_endpoint_auth_methods_supported: ['client_secret_basic'],
          scopes_supported: ['openid', 'email', 'profile'],
        },
      }
    if (req.method === 'GET' && url.pathname === '/jwks')
      return {
        status: 200,
        body: { keys: [{ ...this.key.publicKey.export({ format: 'jwk' }), kid: this.kid, alg: 'RS256', use: 'sig' }] },
      }
    if (req.method === 'GET' && url.pathname === '/authorize') return this.authorize(url.searchParams)
    if (req.method === 'POST' && url.pathname === '/token') return this.token(req)
    return { status: 404, body: { error: 'not_found' } }
  }

  private authorize(q: URLSearchParams) {
    const bad = (error: string) => ({ status: 400, body: { error, error_description: error } })
    if (q.get('client_id') !== this.clientId) return bad('unauthorized_client')
    if (q.get('response_type') !== 'code') return bad('unsupported_response_type')
    if (!this.redirectUri || q.get('redirect_uri') !== this.redirectUri) return bad('invalid redirect_uri')
    if (!q.get('scope')?.split(' ').includes('openid')) return bad('invalid_scope')
    if (q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge')) return bad('PKCE S256 required')
    const code = randomBytes(16).toString('base64url')
    this.codes.set(code, {
      nonce: q.get('nonce'),
      challenge: q.get('code_challenge')!,
      redirectUri: this.redirectUri,
      user: { ...this.user },
      used: false,
    })
    const back = new URL(this.redirectUri)
    back.searchParams.set('code', code)
    if (q.get('state') !== null) back.searchParams.set('state', q.get('state')!)
    return { status: 302, headers: { location: back.href } }
  }

  private async token(req: IncomingMessage) {
    const refuse = (error: string) => ({ status: 400, body: { error, error_description: error } })
    let raw = ''
    for await (const chunk of req) raw += chunk
    const form = new URLSearchParams(raw)
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1]
    const [id, secret] = basic
      ? Buffer.from(basic, 'base64').toString().split(':').map(decodeURIComponent)
      : [undefined, undefined]
    if (id !== this.clientId || secret !== this.clientSecret) return { status: 401, body: { error: 'invalid_client' } }
    this.tokenRequests++
    if (form.get('grant_type') !== 'authorization_code') return refuse('unsupported_grant_type')
    const grant = this.codes.get(form.get('code') ?? '')
    if (!grant || (grant.used && !this.tamper.reuseCodes)) return refuse('invalid_grant')
    grant.used = true
    if (form.get('redirect_uri') !== grant.redirectUri) return refuse('invalid_grant')
    const challenge = createHash('sha256')
      .update(form.get('code_verifier') ?? '')
      .digest('base64url')
    if (challenge !== grant.challenge) return refuse('invalid_grant')
    const now = Math.floor(Date.now() / 1000)
    const t = this.tamper
    const claims: Record<string, unknown> = {
      iss: t.iss ?? this.issuer,
      sub: grant.user.sub,
      aud: t.aud ?? this.clientId,
      iat: now,
      exp: now + (t.expInS ?? 300),
      ...(t.nonce !== undefined ? { nonce: t.nonce } : grant.nonce ? { nonce: grant.nonce } : {}),
      email: grant.user.email,
      email_verified: grant.user.email_verified,
      ...(grant.user.name ? { name: grant.user.name } : {}),
      ...t.claims,
    }
    for (const [k, v] of Object.entries(t.claims ?? {})) if (v === undefined) delete claims[k]
    const key = t.foreignKey || t.forgedSignature ? this.otherKey.privateKey : this.key.privateKey
    const kid = t.foreignKey ? 'not-in-the-jwks' : this.kid
    return {
      status: 200,
      body: {
        access_token: randomBytes(16).toString('base64url'),
        token_type: 'Bearer',
        expires_in: 300,
        id_token:
          t.alg === 'none'
            ? unsigned(claims)
            : t.alg === 'HS256'
              ? hs256(claims, this.clientSecret)
              : jwt({ alg: 'RS256', typ: 'JWT', kid }, claims, key),
      },
    }
  }
}

function jwt(header: object, claims: object, key: KeyObject): string {
  const part = (x: object) => Buffer.from(JSON.stringify(x)).toString('base64url')
  const input = `${part(header)}.${part(claims)}`
  return `${input}.${sign('sha256', Buffer.from(input), key).toString('base64url')}`
}

function unsigned(claims: object): string {
  const part = (x: object) => Buffer.from(JSON.stringify(x)).toString('base64url')
  return `${part({ alg: 'none', typ: 'JWT' })}.${part(claims)}.`
}

function hs256(claims: object, secret: string): string {
  const part = (x: object) => Buffer.from(JSON.stringify(x)).toString('base64url')
  const input = `${part({ alg: 'HS256', typ: 'JWT' })}.${part(claims)}`
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`
}

/**
 * What the console does to start a flow at Hangar (`path`, with the session's `token` to link): the cookie comes
 * back, and the provider's redirect is followed to the callback it names (which is not called).
 */
export async function startOidcFlow(
  baseUrl: string,
  o: { path?: string; body?: Record<string, string>; token?: string } = {},
): Promise<{ cookie: string; callback: string; authorizationUrl: string }> {
  const res = await fetch(`${baseUrl}${o.path ?? '/v2/sessions/oidc'}`, {
    method: 'POST',
    headers: {
      ...(o.body ? { 'content-type': 'application/json' } : {}),
      ...(o.token ? { authorization: `Bearer ${o.token}` } : {}),
    },
    body: o.body ? JSON.stringify(o.body) : undefined,
  })
  expect(res.status, await res.clone().text()).toBe(201)
  const cookie = res.headers.get('set-cookie')!.split(';')[0]
  const { authorizationUrl } = (await res.json()) as { authorizationUrl: string }
  const atProvider = await fetch(authorizationUrl, { redirect: 'manual' })
  expect(atProvider.status).toBe(302)
  return { cookie, callback: atProvider.headers.get('location')!, authorizationUrl }
}

/** Where a flow ended: the browser arriving back at Hangar's callback with `cookie` (or none) is sent to `location`. */
export interface OidcEnding {
  location: string
  token?: string
  error?: string
  headers: Headers
}

/** The browser arriving back at Hangar's callback `url`, with `cookie` (or none): a 303 to the console. */
export async function finishOidcFlow(url: string, cookie: string | null): Promise<OidcEnding> {
  const res = await fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {} })
  expect(res.status).toBe(303)
  const location = res.headers.get('location')!
  const fragment = new URLSearchParams(location.slice(location.indexOf('#') + 1))
  return {
    location,
    token: fragment.get('oidc') ?? undefined,
    error: fragment.get('oidc-error') ?? undefined,
    headers: res.headers,
  }
}

/**
 * Links the provider's current `user` to the member signed in with `sessionToken`, as a browser would: the
 * session starts the flow, the provider approves, the callback (with the flow's cookie) records the identity.
 * Answers where the callback sent the browser: `/console/#oidc-linked=1`, or `/console/#oidc-error=<why>`.
 */
export async function linkWithProvider(baseUrl: string, sessionToken: string): Promise<string> {
  const { cookie, callback } = await startOidcFlow(baseUrl, { path: '/v2/sessions/oidc/link', token: sessionToken })
  return decodeURIComponent((await finishOidcFlow(callback, cookie)).location)
}
