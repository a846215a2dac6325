import type { EndpointType, Scaling, Workers } from '../../contract/endpoint.js'
import type { Violations } from '../errors.js'

/** The spec's defaults for `workers`. */
export const DEFAULT_WORKERS = { min: 0, max: 3, idleTimeout: 10 } as const

/** What `workers` a body may send (create and PATCH alike). */
export interface WorkersInput {
  min?: number
  max?: number
  idleTimeout?: number
}

/**
 * Whether `workers.idleTimeout` means anything: not for a QUEUE endpoint scaling on REQUEST_COUNT
 * (R10), where it is refused when sent and omitted from responses.
 */
export function usesIdleTimeout(type: EndpointType, scaling: Scaling): boolean {
  return !(type === 'QUEUE' && scaling.type === 'REQUEST_COUNT')
}

/**
 * R10 (400): LOAD_BALANCER endpoints need REQUEST_COUNT scaling; QUEUE_DELAY is for queue endpoints only.
 * Both sentences of the spec describe one condition, so it yields one error line.
 */
export function checkScaling(type: EndpointType, scaling: Scaling, conflicts: Violations): void {
  if (type === 'LOAD_BALANCER' && scaling.type !== 'REQUEST_COUNT') {
    conflicts.add(
      'scaling.type',
      `a LOAD_BALANCER endpoint requires REQUEST_COUNT scaling; ${scaling.type} applies to QUEUE endpoints only`,
    )
  }
}

/**
 * R10 and R11 on the resulting `workers` of a create (`current` null) or PATCH (fields merged over
 * `current`): defaults min 0, max 3, idleTimeout 10; `min` must not be above `max` (400: the spec gives
 * both bounds but not this rule; an endpoint that can never reach its minimum is a conflict, not a
 * choice). An `idleTimeout` sent for a QUEUE endpoint on REQUEST_COUNT is refused; one stored from
 * before a switch to REQUEST_COUNT is dropped, and a switch back starts again from the default.
 */
export function resolveWorkers(
  current: Workers | null,
  input: WorkersInput | undefined,
  type: EndpointType,
  scaling: Scaling,
  conflicts: Violations,
): Workers {
  const idle = usesIdleTimeout(type, scaling)
  if (!idle && input?.idleTimeout !== undefined) {
    conflicts.add(
      'workers.idleTimeout',
      'is not used by a QUEUE endpoint scaling on REQUEST_COUNT; omit it (it applies to QUEUE_DELAY scaling and to LOAD_BALANCER endpoints)',
    )
  }
  const min = input?.min ?? current?.min ?? DEFAULT_WORKERS.min
  const max = input?.max ?? current?.max ?? DEFAULT_WORKERS.max
  if (min > max) {
    const maxSource = input?.max !== undefined ? '' : current ? ' (unchanged)' : ' (the default)'
    if (input?.min === undefined && input?.max !== undefined)
      conflicts.add('workers.max', `${max} is below workers.min ${min}`)
    else conflicts.add('workers.min', `${min} is above workers.max ${max}${maxSource}`)
  }
  const workers: Workers = { min, max }
  if (idle) workers.idleTimeout = input?.idleTimeout ?? current?.idleTimeout ?? DEFAULT_WORKERS.idleTimeout
  return workers
}
