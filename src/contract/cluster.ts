import { Type, type Static } from 'typebox'
import { Closed, DateTime, Id } from './common.js'
import { ContainerSettingsInput } from './container.js'
import { PodMounts, PodStatus } from './pod.js'

export const ClusterType = Type.Enum(['APPLICATION', 'TRAINING', 'SLURM', 'RAY'])
export type ClusterType = Static<typeof ClusterType>

export const ClusterCompute = Closed({
  gpuTypeId: Type.String({ minLength: 1, description: 'GPU type id from the catalog' }),
  gpuCountPerPod: Type.Integer({ minimum: 1, maximum: 128, description: "up to the type's maxCount" }),
  podCount: Type.Integer({ minimum: 2, maximum: 250 }),
})
export type ClusterCompute = Static<typeof ClusterCompute>

const { registry: _registry, ...ClusterContainerInput } = ContainerSettingsInput

/** POST /v2/clusters: every member runs the same container (settings without `registry`). */
export const CreateCluster = Closed({
  name: Type.String({ minLength: 1 }),
  type: ClusterType,
  compute: ClusterCompute,
  ...ClusterContainerInput,
  dataCenterIds: Type.Optional(
    Type.Array(Type.String({ minLength: 1 }), {
      uniqueItems: true,
      description: 'omit or [] = any; every member lands in one of them',
    }),
  ),
  mounts: Type.Optional(PodMounts),
  startJupyter: Type.Optional(Type.Boolean()),
  startSsh: Type.Optional(Type.Boolean()),
})
export type CreateCluster = Static<typeof CreateCluster>

/** PATCH /v2/clusters/{id}: only the name. */
export const UpdateCluster = Closed({ name: Type.String({ minLength: 1 }) })
export type UpdateCluster = Static<typeof UpdateCluster>

export const Cluster = Type.Object({
  id: Id,
  name: Type.String(),
  type: ClusterType,
  compute: Type.Object({ gpuTypeId: Type.String(), gpuCountPerPod: Type.Integer(), podCount: Type.Integer() }),
  createdAt: DateTime,
  pods: Type.Object({
    total: Type.Integer(),
    byStatus: Type.Record(Type.String(), Type.Integer(), { description: 'members by PodStatus; zero counts omitted' }),
  }),
  dataCenterId: Type.Optional(Type.String()),
  network: Type.Optional(
    Type.Object({
      cidr: Type.String(),
      vxlanId: Type.Optional(Type.Integer()),
      vxlanPort: Type.Optional(Type.Integer()),
    }),
  ),
  primary: Type.Optional(
    Type.Object({
      podId: Type.String(),
      status: PodStatus,
      sshEndpoint: Type.Optional(Type.String({ description: 'host:port, when RUNNING with 22/tcp' })),
    }),
  ),
})
export type Cluster = Static<typeof Cluster>

export const ClusterList = Type.Object({ clusters: Type.Array(Cluster) })
export type ClusterList = Static<typeof ClusterList>
