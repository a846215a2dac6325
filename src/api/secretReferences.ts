import type { FastifyInstance, preHandlerAsyncHookHandler } from 'fastify'
import type { SecretService } from '../services/secrets/SecretService.js'

const WRITES = new Set(['POST', 'PUT', 'PATCH'])

/**
 * Refuses a write whose `env` references a secret the caller's account does not have (templates, endpoints,
 * pods, clusters: every body with an `env` object), once the body is valid. One check here rather than one in
 * each service: whatever resource gains an env later is covered. The env is stored as written, references
 * and all; values are put in only when a workload starts (SecretService.resolveEnv).
 */
export function registerSecretReferenceCheck(app: FastifyInstance, secrets: SecretService): void {
  const check: preHandlerAsyncHookHandler = async (req) => {
    const env = (req.body as { env?: unknown } | null | undefined)?.env
    if (!req.principal || !env || typeof env !== 'object' || Array.isArray(env)) return
    const strings = Object.fromEntries(Object.entries(env).filter(([, v]) => typeof v === 'string')) as Record<
      string,
      string
    >
    await secrets.checkReferences(req.principal.accountId, strings)
  }
  // On the routes whose body schema has an `env` only, decided as each route is added: no other request pays.
  app.addHook('onRoute', (route) => {
    const body = (route.schema as { body?: unknown } | undefined)?.body
    if (!hasProperty(body, 'env') || ![route.method].flat().some((m) => WRITES.has(m))) return
    route.preHandler = [...[route.preHandler ?? []].flat(), check]
  })
}

/** Whether a body schema (an object, or a union or intersection of objects) has a top-level property `name`. */
function hasProperty(schema: unknown, name: string): boolean {
  if (!schema || typeof schema !== 'object') return false
  const s = schema as { properties?: Record<string, unknown>; allOf?: unknown[]; anyOf?: unknown[]; oneOf?: unknown[] }
  if (s.properties && name in s.properties) return true
  return [...(s.allOf ?? []), ...(s.anyOf ?? []), ...(s.oneOf ?? [])].some((x) => hasProperty(x, name))
}
