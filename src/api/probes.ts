import type { FastifyInstance } from 'fastify'
import type { LeaderView } from './leaderForwarding.js'

/**
 * Liveness and readiness for an orchestrator (deploy/kubernetes: the Deployment's probes), public like the worker
 * protocol and without a body to parse. `/livez`: the process answers HTTP. `/readyz`: it serves the API, and
 * says whether it leads (`role`: leader, follower, or single for one process on its own), which is how an
 * operator, or the failover test, finds the leader among the replicas. While the process drains before it stops
 * (`drainMs`), `/readyz` answers 503 `draining`.
 */
export function registerProbes(
  app: FastifyInstance,
  replicas: { leadership: LeaderView } | undefined,
  draining: () => boolean = () => false,
): void {
  const config = { access: 'public' as const, quota: false }
  app.get('/livez', { schema: { hide: true }, config }, async () => ({ status: 'ok' }))
  // While it drains before stopping, a replica says so with a 503: the orchestrator sends it no new connections.
  app.get('/readyz', { schema: { hide: true }, config }, async (_req, reply) => {
    const role = !replicas ? 'single' : replicas.leadership.isLeader ? 'leader' : 'follower'
    if (draining()) return reply.code(503).send({ status: 'draining', role })
    return { status: 'ready', role }
  })
}
