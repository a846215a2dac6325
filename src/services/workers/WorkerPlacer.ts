import type { Allocation, Fleet, PlacementFailure, PlacementRequest } from '../../catalog/Fleet.js'
import type { EndpointRecord } from '../../domain/endpoints/endpoint.js'
import { placementRequest } from '../../domain/workers/placement.js'
import type { LiveWorker } from './LiveWorker.js'

/** A parked worker as placement weighs it: what it holds, its FlashBoot priority, since when it is parked. */
export type ParkedWorker = Pick<LiveWorker, 'id' | 'allocation' | 'parkedPriority' | 'phaseSince'>

export interface WorkerPlacerOptions {
  /** The capacity ledger capacity is taken from and given back to. */
  fleet: Pick<Fleet, 'reserve' | 'release'>
  /** GPU pools and the types in each (CatalogService.pools). */
  pools: () => Map<string, string[]>
  /** Parked (FlashBoot) workers of every endpoint: a cache that gives way when capacity is needed. */
  parked: () => ParkedWorker[]
  /** Stops an evicted parked worker (its capacity is already given back). */
  evict: (w: ParkedWorker, why: string) => void
}

/**
 * Takes capacity for a worker from the fleet ledger: the endpoint's GPU types in order (pools minus
 * exclusions, hosts in its data centers with a fitting CUDA version) or its CPU configurations in order.
 * When nothing is free, parked workers that hold fitting capacity are evicted (FLASHBOOT ones before
 * PRIORITY_FLASHBOOT ones, the longest parked first) until the worker fits.
 */
export class WorkerPlacer {
  constructor(private readonly o: WorkerPlacerOptions) {}

  /** Takes capacity for worker `id` of `ep`, evicting parked workers if that makes room; else says why nothing fits. */
  reserve(id: string, ep: Pick<EndpointRecord, 'id' | 'gpu' | 'cpu' | 'dataCenterIds'>): Allocation | PlacementFailure {
    const { fleet } = this.o
    const req = placementRequest(ep, this.o.pools())
    let result = fleet.reserve(id, req)
    if (!('reason' in result)) return result
    const candidates = this.o
      .parked()
      .filter((w) => w.allocation && fits(w.allocation, req))
      .sort((a, b) => Number(a.parkedPriority) - Number(b.parkedPriority) || a.phaseSince - b.phaseSince)
    for (const w of candidates) {
      fleet.release(w.id)
      this.o.evict(w, `evicted from parking: its capacity is needed by a worker of endpoint ${ep.id}`)
      result = fleet.reserve(id, req)
      if (!('reason' in result)) return result
    }
    return result
  }
}

/** Whether giving back `a` could make room for `req` (same kind of capacity, an acceptable data center). */
function fits(a: Allocation, req: PlacementRequest): boolean {
  if (req.dataCenterIds.length > 0 && !req.dataCenterIds.includes(a.dataCenterId)) return false
  return req.gpu ? a.gpuTypeId !== null && req.gpu.typeIds.includes(a.gpuTypeId) : a.vcpus > 0
}
