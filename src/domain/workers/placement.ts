import type { PlacementRequest } from '../../catalog/Fleet.js'
import type { EndpointRecord } from '../endpoints/endpoint.js'

/**
 * What one worker of an endpoint needs from the fleet: GPU endpoints list the types of their pools in
 * order, minus the excluded ones; CPU endpoints list their configurations in order, memory derived from
 * the flavor (vcpuCount x ramGbPerVcpu, as stored in `memory`).
 */
export function placementRequest(
  ep: Pick<EndpointRecord, 'gpu' | 'cpu' | 'dataCenterIds'> & Partial<Pick<EndpointRecord, 'accountId'>>,
  pools: Map<string, string[]>,
): PlacementRequest {
  // Owned by the endpoint's account: its quotas apply where the worker is placed.
  const owner = ep.accountId ? { owner: { accountId: ep.accountId, kind: 'worker' as const } } : {}
  if (ep.gpu) {
    const excluded = new Set(ep.gpu.excludedTypes ?? [])
    const typeIds = [...new Set(ep.gpu.pools.flatMap((p) => pools.get(p) ?? []))].filter((t) => !excluded.has(t))
    return {
      dataCenterIds: ep.dataCenterIds,
      ...owner,
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
    ...owner,
    cpu: (ep.cpu ?? []).map((c) => ({ flavorId: c.id, vcpus: c.vcpuCount, memoryGb: c.memory })),
  }
}
