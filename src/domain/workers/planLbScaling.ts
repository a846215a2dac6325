import { planScaling, type EndpointScaling, type ScalingDecision } from './planScaling.js'

/** Requests of a load-balancing endpoint: waiting for a worker (in arrival order), and in flight on workers. */
export interface LbDemand {
  waiting: number
  inFlight: number
  /** How long the oldest waiting request has waited, ms (0 when none). */
  oldestWaitMs: number
}

/** A load-balancing endpoint at the moment of the decision: its workers and limits as for queue endpoints. */
export type LbScaling = Omit<EndpointScaling, 'policy' | 'queued' | 'queuedLow' | 'inProgress' | 'oldestWaitMs'> & {
  /** Concurrent requests one worker should carry (scaling.requestCount). */
  requestCount: number
  demand: LbDemand
}

/**
 * The scaling policy of LOAD_BALANCER endpoints: REQUEST_COUNT on requests rather than jobs, so
 * desired = ceil((waiting + in flight) / requestCount) within workers.min..max. A request waiting with no
 * worker is a cold start (one worker at once); idle workers go after workers.idleTimeout down to min
 * (zero by default), with the same hysteresis, FlashBoot parking, crash back-off and rollout as queue
 * endpoints. A worker removed while it serves requests is retired: it gets no new request and stops once
 * its last one ends (draining). That is planScaling's REQUEST_COUNT rule with requests in place of jobs.
 */
export function planLbScaling(e: LbScaling): ScalingDecision {
  return planScaling(lbEndpointScaling(e))
}

/** A load-balancing endpoint in planScaling's terms: waiting requests are its queue, in-flight ones its running jobs. */
export function lbEndpointScaling(e: LbScaling): EndpointScaling {
  const { requestCount, demand, ...rest } = e
  return {
    ...rest,
    policy: { type: 'REQUEST_COUNT', requestCount },
    queued: demand.waiting,
    queuedLow: 0,
    inProgress: demand.inFlight,
    oldestWaitMs: demand.oldestWaitMs,
  }
}

/** A worker that could take a request now. */
export interface LbCandidate {
  id: string
  inFlight: number
}

/**
 * Least-in-flight balancing: the candidate with the fewest requests in flight, below `capacity` each (the
 * endpoint's requestCount); ties go to the earliest in the list. Null when every one is full: the request
 * waits in line.
 */
export function pickWorker(candidates: readonly LbCandidate[], capacity: number): string | null {
  let best: LbCandidate | null = null
  for (const c of candidates) if (c.inFlight < capacity && (best === null || c.inFlight < best.inFlight)) best = c
  return best?.id ?? null
}

/** A worker's health as its health endpoint reports it. */
export type LbHealth = 'INITIALIZING' | 'READY' | 'UNHEALTHY'

/** The spec's reading of a health check: 200 ready, 204 initializing, anything else (or no answer: null) unhealthy. */
export function healthOf(status: number | null): LbHealth {
  return status === 200 ? 'READY' : status === 204 ? 'INITIALIZING' : 'UNHEALTHY'
}

/**
 * Ports of a load-balancing worker from its endpoint env: PORT (the spec's default 80) and PORT_HEALTH.
 * The spec gives PORT_HEALTH 80 too; here it defaults to PORT, which is the same when neither is set and
 * keeps a server that moved only PORT (one listener) healthy instead of polled on a port nobody opens.
 */
export function lbPorts(env: Record<string, string>): { port: number; healthPort: number } {
  const port = portOf(env.PORT, 80)
  return { port, healthPort: portOf(env.PORT_HEALTH, port) }
}

function portOf(value: string | undefined, fallback: number): number {
  const n = Number(value)
  return Number.isInteger(n) && n > 0 && n < 65536 ? n : fallback
}
