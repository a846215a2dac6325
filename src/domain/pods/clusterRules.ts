import type { CreateCluster, ClusterType } from '../../contract/cluster.js'
import type { PodClusterRole } from '../../contract/pod.js'
import type { Static } from 'typebox'
import { resolveContainer, type ContainerFields } from '../endpoints/endpointRulesContainer.js'
import { Violations } from '../errors.js'
import type { PodSpec } from './pod.js'
import { createMounts } from './podMounts.js'
import { checkDataCenters, checkPortValues, DEFAULT_POD_DISK_GB, type PodRuleContext } from './podRules.js'

/** What every member of a cluster runs: one pod spec, the same for each rank (rank env is added per member). */
export interface ClusterSpec {
  name: string
  type: ClusterType
  compute: CreateCluster['compute']
  dataCenterIds: string[]
  member: PodSpec
}

/**
 * The rules of POST /v2/clusters: 422 for values (no image, unreadable args, bad ports), 400 for conflicts
 * (an unknown GPU type or more GPUs per pod than it offers, the pod mount rules, unknown data centers).
 * Members are GPU pods of one type; startSsh/startJupyter inject env as on pods (one password for all).
 */
export function createClusterSpec(
  body: CreateCluster,
  ctx: Omit<PodRuleContext, 'template' | 'registries'>,
): ClusterSpec {
  const invalid = new Violations()
  const conflicts = new Violations()
  const container: ContainerFields = resolveContainer(null, null, body, invalid, conflicts)
  checkPortValues(container.ports, invalid)
  invalid.throwIfAny('unprocessable')
  const type = ctx.catalog.gpuType(body.compute.gpuTypeId)
  if (!type)
    conflicts.add(
      'compute.gpuTypeId',
      `${JSON.stringify(body.compute.gpuTypeId)} is not a GPU type; see /v2/catalog/gpus`,
    )
  else if (body.compute.gpuCountPerPod > type.maxCount) {
    conflicts.add(
      'compute.gpuCountPerPod',
      `${body.compute.gpuCountPerPod} is more than ${body.compute.gpuTypeId} offers per pod (at most ${type.maxCount})`,
    )
  }
  const dataCenterIds = [...(body.dataCenterIds ?? [])]
  checkDataCenters(dataCenterIds, ctx.catalog, conflicts)
  const mounts = createMounts(body.mounts, null, false, dataCenterIds, ctx.volumes, conflicts)
  conflicts.throwIfAny('bad_request')
  const env = { ...container.env }
  if (body.startSsh && env.PUBLIC_KEY === undefined && ctx.sshKeys.length > 0) env.PUBLIC_KEY = ctx.sshKeys.join('\n')
  if (body.startJupyter && env.JUPYTER_PASSWORD === undefined) env.JUPYTER_PASSWORD = ctx.newPassword()
  return {
    name: body.name,
    type: body.type,
    compute: { ...body.compute },
    dataCenterIds,
    member: {
      ...container,
      env,
      disk: body.disk ?? DEFAULT_POD_DISK_GB,
      name: body.name,
      cloud: 'SECURE',
      dataCenterIds,
      globalNetworking: false,
      gpu: {
        id: body.compute.gpuTypeId,
        count: body.compute.gpuCountPerPod,
        allowedCudaVersions: [],
        minCudaVersion: null,
      },
      cpu: null,
      mounts,
      locked: false,
    },
  }
}

/** The role of a rank: SLURM and RAY clusters name their primary and the others; the rest have none. */
export function clusterRole(type: ClusterType, rank: number): Static<typeof PodClusterRole> | undefined {
  if (type === 'SLURM') return rank === 0 ? 'SLURM_CONTROLLER' : 'SLURM_COMPUTE'
  if (type === 'RAY') return rank === 0 ? 'RAY_HEAD' : 'RAY_WORKER'
  return undefined
}

/**
 * What distributed launchers read, with the reference platform's names (PRIMARY_*, NODE_ADDR, NUM_NODES,
 * NUM_TRAINERS = GPUs per node, HOST_NODE_ADDR, WORLD_SIZE = all GPUs) and PyTorch's (MASTER_ADDR,
 * MASTER_PORT, NODE_RANK, WORLD_SIZE). These win over the body's env: a member must not be told a wrong rank.
 */
export function clusterEnv(o: {
  rank: number
  nodeAddr: string
  primaryAddr: string
  primaryPort: number
  podCount: number
  gpusPerPod: number
}): Record<string, string> {
  return {
    PRIMARY_ADDR: o.primaryAddr,
    MASTER_ADDR: o.primaryAddr,
    PRIMARY_PORT: String(o.primaryPort),
    MASTER_PORT: String(o.primaryPort),
    HOST_NODE_ADDR: `${o.primaryAddr}:${o.primaryPort}`,
    NODE_ADDR: o.nodeAddr,
    NODE_RANK: String(o.rank),
    NUM_NODES: String(o.podCount),
    NUM_TRAINERS: String(o.gpusPerPod),
    WORLD_SIZE: String(o.podCount * o.gpusPerPod),
  }
}

/** The i-th address of a /24 block (`127.80.17.0/24`, 0 -> `127.80.17.1`). */
export function memberAddress(cidr: string, rank: number): string {
  const base = cidr.split('/')[0].split('.').map(Number)
  return `${base[0]}.${base[1]}.${base[2]}.${rank + 1}`
}
