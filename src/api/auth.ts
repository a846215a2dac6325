import type { FastifyInstance, FastifyRequest } from 'fastify'
import { DomainError } from '../domain/errors.js'
import type { AccountService, Principal } from '../services/accounts/AccountService.js'
import { permissionOf } from './routePermissions.js'

/**
 * Who may call a route. `read` allows ALL and READ_ONLY keys, `write` only ALL keys, `admin` only admin
 * keys, `public` anyone. RESTRICTED keys are refused unless the route says how they may use it.
 */
export type Access = 'public' | 'read' | 'write' | 'admin'

/**
 * How a RESTRICTED key (limited to some endpoints) may use a route: `any` (e.g. the catalog), `endpoint`
 * (allowed when the `id`/`endpointId` path parameter is one of its endpoints), `list` (the service filters),
 * `jobs` (job operations: reads and writes allowed on its endpoints).
 */
export type RestrictedUse = 'any' | 'endpoint' | 'list' | 'jobs'

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access
    restricted?: RestrictedUse
    /** Also accept the key bare in `authorization` (job operations: the spec's examples send it so). */
    bareKey?: boolean
    /** Status of a refusal for lack of permission: the spec answers job operations with 401, not 403. */
    deniedAs?: 'forbidden' | 'unauthorized'
  }
  interface FastifyRequest {
    principal: Principal
  }
}

/** Authenticates every non-public route and applies its access rule; 401 and 403 are problems. */
export function registerAuth(app: FastifyInstance, accounts: AccountService): void {
  app.decorateRequest('principal', null as unknown as Principal)
  // A callback hook: a key seen in the last seconds is answered from memory without a promise (every request).
  app.addHook('onRequest', (req, _reply, done) => {
    const config = req.routeOptions.config
    // Unmatched routes reach the not-found handler, which answers 404/405 without asking for a key.
    if (!req.routeOptions.url) return done()
    const access = config.access ?? (req.method === 'GET' || req.method === 'HEAD' ? 'read' : 'write')
    if (access === 'public') return done()
    const admit = (principal: Principal) => {
      req.principal = principal
      authorize(req, access, config.restricted, config.deniedAs ?? 'forbidden')
    }
    let key: string | undefined
    try {
      key = bearer(req.headers.authorization, config.bareKey === true)
      const cached = key === undefined ? undefined : accounts.cachedPrincipal(key)
      if (cached) {
        admit(cached)
        return done()
      }
    } catch (err) {
      return done(err as Error)
    }
    accounts.authenticate(key).then(
      (principal) => {
        try {
          admit(principal)
        } catch (err) {
          return done(err as Error)
        }
        done()
      },
      (err: Error) => done(err),
    )
  })
}

/** The key of an Authorization header (`Bearer <key>`, or bare where allowed); 401 when malformed. */
export function bearer(header: string | undefined, bareKey: boolean): string | undefined {
  if (header === undefined || header === '') return undefined
  if (bareKey && !/^Bearer[ \t]/i.test(header)) return header.trim()
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header)
  if (!m) throw new DomainError('unauthorized', 'malformed Authorization header: expected "Bearer <key>"')
  return m[1]
}

function authorize(
  req: FastifyRequest,
  access: Access,
  restricted: RestrictedUse | undefined,
  deniedAs: 'forbidden' | 'unauthorized',
): void {
  try {
    check(req, access, restricted)
  } catch (err) {
    if (err instanceof DomainError && err.kind === 'forbidden' && deniedAs !== 'forbidden')
      throw new DomainError(deniedAs, err.detail)
    throw err
  }
}

function check(req: FastifyRequest, access: Access, restricted: RestrictedUse | undefined): void {
  const p = req.principal
  // A member (session or member key): the route table and the role decide, for every route alike.
  if (p.member) return checkMember(req, p.member)
  if (access === 'admin') {
    if (!p.admin) throw new DomainError('forbidden', 'this route needs an admin key')
    return
  }
  if (p.permission === 'RESTRICTED') {
    const what = `${req.method} ${req.routeOptions.url}`
    if ((access === 'write' && restricted !== 'jobs') || !restricted)
      throw new DomainError(
        'forbidden',
        `a RESTRICTED key cannot use ${what}; it may only read and run jobs on endpoints ${p.endpointIds.join(', ')}`,
      )
    if (restricted === 'endpoint' || restricted === 'jobs') {
      const params = req.params as { id?: string; endpointId?: string }
      const id = params.endpointId ?? params.id ?? ''
      if (!p.endpointIds.includes(id))
        throw new DomainError(
          'forbidden',
          `this key is restricted to endpoints ${p.endpointIds.join(', ')}, not ${JSON.stringify(id)}`,
        )
    }
    return
  }
  if (access === 'write' && p.permission !== 'ALL')
    throw new DomainError('forbidden', `a ${p.permission} key cannot use ${req.method} ${req.routeOptions.url}`)
}

/** A member may call a route when its role is granted the route's permission in ROUTE_PERMISSIONS. */
function checkMember(req: FastifyRequest, m: NonNullable<Principal['member']>): void {
  const what = `${req.method} ${req.routeOptions.url}`
  const needed = permissionOf(req.method, req.routeOptions.url ?? '')
  if (needed === 'public') return
  if (needed === undefined)
    throw new DomainError('forbidden', `${what} is not open to members (only to the account's API keys)`)
  if (!m.grants.has(needed))
    throw new DomainError(
      'forbidden',
      `${what} needs the ${needed} permission, which ${m.sessionId ? `role ${m.role}` : `this member key (member role ${m.role})`} does not hold`,
    )
}
