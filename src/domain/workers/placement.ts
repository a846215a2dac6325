import type { PlacementRequest } from '../../catalog/Fleet.js'
import type { EndpointRecord } from '../endpoints/endpoint.js'

/**
 * What one worker of an endpoint needs from the fleet: GPU endpoints list the types of their pools in
 * order, minus the excluded ones; CPU endpoints list their configurations in order, memory derived from
 * the flavor (vcpuCount x ramGbPerVcpu, as stored in `memory`).
 */
export function placementRequest(
  ep: Pick<EndpointRecord, 'gpu' | 'cpu' | 'dataCenterIds'>,
  pools: Map<string, string[]>,
): PlacementRequest {
  if (ep.gpu) {
    const excluded = new Set(ep.gpu.excludedTypes ?? [])
    const typeIds = [...new Set(ep.gpu.pools.flatMap((p) => pools.get(p) ?? []))].filter((t) => !excluded.has(t))
    return {
      dataCenterIds: ep.dataCenterIds,
      gpu: {
        typeIds,
        count: ep.gpu.count,
        allowedCudaVersions: ep.gpu.allowedCudaVersions,
        minCudaVersion: ep.gpu.minCudaVersion,
      },
    }
  }
  return {
    dataCenterIds: ep.dataCenterIds,
    cpu: (ep.cpu ?? []).map((c) => ({ flavorId: c.id, vcpus: c.vcpuCount, memoryGb: c.memory })),
  }
}
