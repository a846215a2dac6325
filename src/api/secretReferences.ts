import type { FastifyInstance } from 'fastify'
import type { SecretService } from '../services/secrets/SecretService.js'

const WRITES = new Set(['POST', 'PUT', 'PATCH'])

/**
 * Refuses a write whose `env` references a secret the caller's account does not have (templates, endpoints,
 * pods, clusters: every body with an `env` object), once the body is valid. One check here rather than one in
 * each service: whatever resource gains an env later is covered. The env is stored as written, references
 * and all; values are put in only when a workload starts (SecretService.resolveEnv).
 */
export function registerSecretReferenceCheck(app: FastifyInstance, secrets: SecretService): void {
  app.addHook('preHandler', async (req) => {
    if (!WRITES.has(req.method) || !req.principal) return
    const env = (req.body as { env?: unknown } | null | undefined)?.env
    if (!env || typeof env !== 'object' || Array.isArray(env)) return
    const strings = Object.fromEntries(Object.entries(env).filter(([, v]) => typeof v === 'string')) as Record<
      string,
      string
    >
    await secrets.checkReferences(req.principal.accountId, strings)
  })
}
