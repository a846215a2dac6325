import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply } from 'fastify'
import { Type } from 'typebox'
import { OidcCallbackQuery, OidcProvider, StartedOidcSignIn, StartOidcSignIn } from '../../contract/member.js'
import { DomainError } from '../../domain/errors.js'
import { OIDC_CALLBACK_PATH, OIDC_FLOW_MS } from '../../services/accounts/OidcSignIn.js'
import type { AppDeps } from '../app.js'
import { statusOfKind } from '../problem.js'

const tags = ['members']
const pub = { access: 'public' as const }
/** The cookie that binds a sign-in to the browser that started it; sent back to the callback only. */
const COOKIE = 'hangar_oidc'
const COOKIE_PATH = '/v2/sessions/oidc'

/**
 * Sign-in with an OpenID Connect provider (issue 36, item 3), where `members.oidc` configures one: the console
 * starts it, the provider sends the browser back to the callback, which ends on the console with the same
 * session token a password sign-in gives, in the URL's fragment (never sent to a server, so in no log).
 */
export const oidcRoutes =
  ({ signIns }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    const oidc = signIns?.oidc
    const configured = () => {
      if (!oidc) throw new DomainError('not_found', 'OIDC sign-in is not configured (members.oidc in the config file)')
      return oidc
    }
    /** Answers the provider's URL and sets the cookie binding the flow to this browser. */
    const started = (reply: FastifyReply, { authorizationUrl, flow }: { authorizationUrl: string; flow: string }) => {
      const secure = configured().redirectUrl().startsWith('https:') ? '; Secure' : ''
      reply.header(
        'set-cookie',
        `${COOKIE}=${flow}; Path=${COOKIE_PATH}; Max-Age=${OIDC_FLOW_MS / 1000}; HttpOnly; SameSite=Lax${secure}`,
      )
      return reply.code(201).send({ authorizationUrl })
    }
    app.get(
      '/v2/sessions/oidc',
      {
        schema: {
          tags,
          summary: 'The OpenID Connect provider members may sign in with, if any (Hangar extension)',
          response: { 200: OidcProvider },
        },
        config: pub,
      },
      async () => ({ provider: oidc ? { name: oidc.name } : null }),
    )
    app.post(
      '/v2/sessions/oidc',
      {
        schema: {
          tags,
          summary: 'Start signing in with the OpenID Connect provider (Hangar extension)',
          description:
            "Answers the provider's authorization URL to send the browser to, and sets a cookie binding the sign-in to this browser (state, nonce and PKCE verifier, sealed). With `invitation`, signing in accepts that invitation. 404 when no provider is configured.",
          body: StartOidcSignIn,
          response: { 201: StartedOidcSignIn },
        },
        config: { ...pub, audit: false },
      },
      async (req, reply) => started(reply, await configured().start(req.body.invitation)),
    )
    app.post(
      '/v2/sessions/oidc/link',
      {
        schema: {
          tags,
          summary: "Link the OpenID Connect provider to one's membership (Hangar extension)",
          description:
            "For a member signed in with a password (a session): starts the provider's flow like `POST /v2/sessions/oidc`, and its callback records the provider's identity (issuer and `sub`) on this member, where the provider's verified email is the member's and no other member holds that identity; the member then signs in with the provider. The callback ends on the console's members page: `/console/members#oidc-linked=1` or `/console/members#oidc-error=<why>`.",
          response: { 201: StartedOidcSignIn },
        },
        config: { audit: false },
      },
      async (req, reply) => started(reply, await configured().start(undefined, req.principal)),
    )
    app.get(
      OIDC_CALLBACK_PATH,
      {
        schema: {
          tags,
          summary: 'Where the OpenID Connect provider sends the browser back (Hangar extension)',
          description:
            'Checks the answer (state against the cookie, the code exchanged with PKCE, the ID token: signature, iss, aud, exp, nonce, a verified email) and redirects to the console: `/console/#oidc=<session token>` signed in, or `/console/#oidc-error=<why>`.',
          querystring: OidcCallbackQuery,
          response: { 303: Type.Null({ description: 'to the console, signed in or saying why not' }) },
        },
        // The query's code and state are kept out of the request log (see requestLog.ts).
        config: { ...pub, audit: { action: 'member.sign-in.oidc', resourceType: 'session' }, logQuery: false },
      },
      async (req, reply) => {
        // The flow is used up whatever happens: the browser starts again from the console.
        reply.header('set-cookie', `${COOKIE}=; Path=${COOKIE_PATH}; Max-Age=0; HttpOnly; SameSite=Lax`)
        // The answer's Location holds a session token: no cache may keep it, and the callback's address (code and
        // state) is no page's referrer.
        reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer')
        const query = req.url.includes('?') ? req.url.slice(req.url.indexOf('?')) : ''
        const cookie = cookieOf(req.headers.cookie, COOKIE)
        // A link ends where it started (the members page); a sign-in on the console's first page.
        const landing = oidc?.linking(cookie) ? '/console/members' : '/console/'
        try {
          const { session, principal } = await configured().finish(query, cookie, {
            ip: req.ip ?? null,
            onRefusedMember: (p) => {
              req.principal = p
            },
          })
          req.principal = principal
          if (!session) return reply.redirect(`${landing}#oidc-linked=1`, 303)
          return reply.redirect(`${landing}#oidc=${encodeURIComponent(session.token)}`, 303)
        } catch (err) {
          if (!(err instanceof DomainError)) req.log.error({ err }, 'OIDC sign-in failed')
          const detail = err instanceof DomainError ? err.detail : 'OIDC sign-in failed: see the server log'
          req.auditStatus = err instanceof DomainError ? statusOfKind(err.kind) : 500
          return reply.redirect(`${landing}#oidc-error=${encodeURIComponent(detail)}`, 303)
        }
      },
    )
  }

/** One cookie's value from a Cookie header (no cookie library for the one cookie Hangar sets). */
function cookieOf(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim()
  }
  return undefined
}
