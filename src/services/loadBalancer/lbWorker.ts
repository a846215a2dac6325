import { healthCheckPath } from '../../domain/endpoints/endpoint.js'
import { lbPorts } from '../../domain/workers/planLbScaling.js'
import type { PublishedPort, WorkloadPort } from '../../runtime/RuntimeDriver.js'
import type { HttpAddress } from '../workers/types.js'

/**
 * The ports of a load-balancing worker's workload: its endpoint's declared ports, with PORT and
 * PORT_HEALTH (from its env, spec defaults) published as HTTP and named by env, so a runtime that cannot
 * remap ports (local processes) tells the program where to listen.
 */
export function lbWorkloadPorts(declared: WorkloadPort[], env: Record<string, string>): WorkloadPort[] {
  const { port, healthPort } = lbPorts(env)
  const names = new Map<number, string[]>([[port, ['PORT']]])
  names.set(healthPort, [...(names.get(healthPort) ?? []), 'PORT_HEALTH'])
  const rest = declared.filter((p) => !names.has(p.port))
  return [...[...names].map(([p, envNames]) => ({ port: p, protocol: 'http' as const, env: envNames })), ...rest]
}

/** Where the balancer and health checks reach a started worker, from what the runtime published; null if it did not publish PORT. */
export function lbAddress(published: readonly PublishedPort[], env: Record<string, string>): HttpAddress | null {
  const { port, healthPort } = lbPorts(env)
  const main = published.find((p) => p.privatePort === port)
  const health = published.find((p) => p.privatePort === healthPort)
  if (!main || !health) return null
  return {
    host: main.ip === '0.0.0.0' || main.ip === '' ? '127.0.0.1' : main.ip,
    port: main.publicPort,
    healthPort: health.publicPort,
    healthPath: healthCheckPath(env),
  }
}
