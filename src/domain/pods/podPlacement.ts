import type { PlacementRequest } from '../../catalog/Fleet.js'
import type { PodRecord } from './pod.js'

/** What the placement of a pod reads besides the pod. */
export interface PodPlacementContext {
  /** Data centers offering global networking (the catalog's `globalNetwork`). */
  globalNetworkDataCenters: readonly string[]
  /** The data center of the pod's network volume, if it has one: the pod must run there. */
  volumeDataCenter: string | null
}

/**
 * What a pod needs from the fleet: its GPU type (count, CUDA constraint) or its CPU configuration, in its
 * acceptable data centers narrowed by its network volume and global networking. A pod placed before goes
 * back to its host when it can; one with a persistent disk must (the disk lives there).
 */
export function podPlacementRequest(
  pod: Pick<PodRecord, 'gpu' | 'cpu' | 'dataCenterIds' | 'globalNetworking' | 'mounts' | 'placement'> &
    Partial<Pick<PodRecord, 'accountId'>>,
  ctx: PodPlacementContext,
): PlacementRequest | { reason: string } {
  let dcs = [...pod.dataCenterIds]
  if (ctx.volumeDataCenter) dcs = dcs.length ? dcs.filter((d) => d === ctx.volumeDataCenter) : [ctx.volumeDataCenter]
  if (pod.globalNetworking)
    dcs = (dcs.length ? dcs : [...ctx.globalNetworkDataCenters]).filter((d) => ctx.globalNetworkDataCenters.includes(d))
  // An empty list means "any" to the fleet, so a narrowing that left nothing is answered here.
  if (dcs.length === 0 && ctx.volumeDataCenter)
    return {
      reason: `the network volume is in data center ${ctx.volumeDataCenter}, which dataCenterIds does not include`,
    }
  if (dcs.length === 0 && pod.globalNetworking)
    return { reason: 'no acceptable data center supports global networking' }
  const req: PlacementRequest = { dataCenterIds: dcs }
  // Owned by the pod's account: its quotas apply where the pod is placed.
  if (pod.accountId) req.owner = { accountId: pod.accountId, kind: 'pod' }
  if (pod.placement) {
    req.preferHostId = pod.placement.hostId
    if (pod.mounts.persistent) req.onlyHostId = pod.placement.hostId
  }
  if (pod.gpu)
    req.gpu = {
      typeIds: [pod.gpu.id],
      count: pod.gpu.count,
      allowedCudaVersions: pod.gpu.allowedCudaVersions,
      minCudaVersion: pod.gpu.minCudaVersion,
    }
  else if (pod.cpu) req.cpu = [{ flavorId: pod.cpu.id, vcpus: pod.cpu.vcpuCount, memoryGb: pod.cpu.memory }]
  return req
}
