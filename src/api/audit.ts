import type { FastifyInstance, FastifyRequest, onResponseHookHandler, onSendHookHandler } from 'fastify'
import type { AuditLog } from '../services/audit/AuditLog.js'

/** What the audit log records of a route: its action and the type of resource it changes. */
export interface AuditSpec {
  action: string
  resourceType: string
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * How the audit log names this route's changes; `false` keeps it out of the log. Without it, mutating
     * routes under /v2 get a name derived from their path (see `auditSpecOf`).
     */
    audit?: AuditSpec | false
  }
  interface FastifyRequest {
    /** The id of the resource a create made, read from its answer (the only thing read from it). */
    auditCreatedId: string | null
    /** Whether this request's entry was recorded (once, as its answer was made). */
    auditRecorded: boolean
    /**
     * The status the log records instead of the answer's, when the answer's says less: an OIDC callback answers
     * a refused sign-in with a redirect to the console, not with its 403.
     */
    auditStatus: number | null
  }
}

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/** Path segments that name a kind of resource, and the name the log gives it. */
const NOUNS: Record<string, string> = {
  accounts: 'account',
  keys: 'key',
  templates: 'template',
  serverless: 'endpoint',
  registries: 'registry',
  delegations: 'delegation',
  'network-volumes': 'network-volume',
  pods: 'pod',
  clusters: 'cluster',
  'ssh-keys': 'ssh-key',
  secrets: 'secret',
  'webhook-secret': 'webhook-secret',
  quotas: 'quota',
  members: 'member',
  invitations: 'invitation',
}

/** Routes whose derived name would say less than the issue asks (a key is issued; a job route that changes much). */
const OVERRIDES: Record<string, AuditSpec> = {
  'POST /v2/admin/keys': { action: 'key.issue', resourceType: 'key' },
  'POST /v2/:endpointId/purge-queue': { action: 'endpoint.purge-queue', resourceType: 'endpoint' },
}

/**
 * The audit name of a route, or null when it changes nothing worth recording: reads, job traffic and the
 * worker protocol (`/v2/:endpointId/...`: every job, ping and result would drown the changes), proxies.
 * `<noun>` is the last resource segment of the path; the verb is `create` (POST to a collection), `update`
 * (PATCH), `set` (PUT), `delete`, or the path's words after the resource (`key.revoke`, `pod.action`,
 * `webhook-secret.rotate`).
 */
export function auditSpecOf(method: string, url: string): AuditSpec | null {
  const override = OVERRIDES[`${method} ${url}`]
  if (override) return override
  if (!MUTATING.has(method) || !url.startsWith('/v2/')) return null
  const segments = url.slice(4).split('/').filter(Boolean)
  if (segments.length === 0 || segments[0].startsWith(':')) return null
  let resource: string | null = null
  let words: string[] = []
  for (const s of segments) {
    if (s.startsWith(':')) continue
    if (NOUNS[s]) {
      resource = NOUNS[s]
      words = []
    } else if (resource) words.push(s)
  }
  resource ??= segments.filter((s) => !s.startsWith(':')).join('-')
  const verb =
    method === 'DELETE'
      ? 'delete'
      : method === 'PATCH'
        ? 'update'
        : method === 'PUT'
          ? 'set'
          : words.join('.') || 'create'
  return { action: `${resource}.${verb}`, resourceType: resource }
}

/**
 * Records every change made through the API in the audit log, once, here: a hook on the answer of each of the
 * mutating routes, so that no route can be forgotten and refusals (403 from authorization, 400, 409, quota
 * refusals) are recorded as well as successes, which calls inside services would miss. Only names are
 * recorded: the route's action, the resource's id (from the path, or the `id` of a create's answer), the
 * caller, its address and the status; never a body, so no secret value, key or password can reach the log.
 * Callers without a valid key (401) are not recorded: they are no one yet, and anyone could fill the log.
 */
export function registerAudit(app: FastifyInstance, audit: AuditLog): void {
  // Only requests write to the log, so it lives as long as the app: old entries are deleted while it serves
  // (by every replica: the same DELETE, harmless twice), and the last entries are written before it closes,
  // before the store does.
  app.addHook('onReady', async () => audit.start())
  app.addHook('onClose', async () => audit.stop())
  app.decorateRequest('auditCreatedId', null)
  app.decorateRequest('auditRecorded', false)
  app.decorateRequest('auditStatus', null)
  // The hooks go on the audited routes only, decided once as each route is added: job traffic and the worker
  // protocol pay nothing for the log.
  app.addHook('onRoute', (route) => {
    const configured = (route.config as { audit?: AuditSpec | false } | undefined)?.audit
    const specs = new Map<string, AuditSpec>()
    for (const method of [route.method].flat()) {
      const spec = configured === false ? null : (configured ?? auditSpecOf(method, route.url))
      if (spec) specs.set(method, spec)
    }
    if (specs.size === 0) return
    const record = (req: FastifyRequest, answered: number) => {
      const status = req.auditStatus ?? answered
      const spec = specs.get(req.method)
      // Callers without a valid key have no principal: not recorded (see above). Recorded once per request.
      if (!spec || !req.principal || req.auditRecorded) return
      req.auditRecorded = true
      const params = paramsOf(req)
      audit.record({
        // A member acting through a session or their own key is the member; the account's keys are themselves.
        actor: req.principal.member
          ? { type: 'member', id: req.principal.member.id, accountId: req.principal.accountId }
          : { type: 'key', id: req.principal.keyId, accountId: req.principal.accountId },
        action: actionOf(spec, req),
        resourceType: spec.resourceType,
        resourceId: params.id ?? params.endpointId ?? req.auditCreatedId,
        outcome: status >= 500 ? 'failed' : status >= 400 ? 'refused' : 'success',
        status,
        ip: req.ip ?? null,
        requestId: requestIdOf(req),
      })
    }
    // Recorded as the answer is made, not once it is delivered: a client that hangs up before the answer of
    // its change (a DELETE, say) must not leave the change unrecorded, and Fastify runs no onResponse then.
    const onSend: onSendHookHandler = (req, reply, payload, done) => {
      // A create's new id is in its answer only: read that one field of a 2xx JSON answer without a path id.
      if (req.method === 'POST' && reply.statusCode < 300 && typeof payload === 'string' && !paramsOf(req).id) {
        try {
          const id = (JSON.parse(payload) as { id?: unknown } | null)?.id
          if (typeof id === 'string') req.auditCreatedId = id
        } catch {
          // Not JSON: no id to take from it.
        }
      }
      record(req, reply.statusCode)
      done(null, payload)
    }
    // Answers that skip onSend (none today; a hijacked reply would) are recorded as they end.
    const onResponse: onResponseHookHandler = (req, reply, done) => {
      record(req, reply.statusCode)
      done()
    }
    route.onSend = [...[route.onSend ?? []].flat(), onSend]
    route.onResponse = [...[route.onResponse ?? []].flat(), onResponse]
  })
}

/**
 * The request's id as the log keeps it: the client may name it (`x-request-id`, to find its calls), so only a
 * short plain one is kept; one of 8 KB of anything would otherwise be stored with every entry.
 */
function requestIdOf(req: FastifyRequest): string | null {
  return typeof req.id === 'string' && /^[\w.:/+=-]{1,128}$/.test(req.id) ? req.id : null
}

function paramsOf(req: FastifyRequest): { id?: string; endpointId?: string } {
  return (req.params ?? {}) as { id?: string; endpointId?: string }
}

/** A pod's action names what was done (`pod.stop`), read from the body's `action` (an enum, never a secret). */
function actionOf(spec: AuditSpec, req: FastifyRequest): string {
  if (spec.action !== 'pod.action') return spec.action
  const action = (req.body as { action?: unknown } | undefined)?.action
  return typeof action === 'string' && /^[a-z]{1,20}$/.test(action) ? `pod.${action}` : spec.action
}
