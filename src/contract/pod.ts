import { Type, type Static } from 'typebox'
import { Closed, CudaVersion, DateTime, Id } from './common.js'
import { ContainerSettings, ContainerSettingsInput } from './container.js'

export const PodStatus = Type.Enum(['PROVISIONING', 'STARTING', 'RUNNING', 'EXITED', 'ERROR', 'TERMINATED'])
export type PodStatus = Static<typeof PodStatus>

export const PodAction = Type.Enum(['start', 'stop', 'restart', 'terminate'])
export type PodAction = Static<typeof PodAction>

export const Cloud = Type.Enum(['SECURE', 'COMMUNITY'])
export type Cloud = Static<typeof Cloud>

const PersistentMount = Closed({
  size: Type.Integer({ minimum: 10, maximum: 4096, description: 'GB' }),
  path: Type.String({ minLength: 1, pattern: '^/', description: 'absolute path inside the pod' }),
})
const NetworkMount = Closed({
  volumeId: Type.String({ minLength: 1, description: 'one of your network volumes' }),
  path: Type.String({ minLength: 1, pattern: '^/', description: 'absolute path inside the pod' }),
})

/** At most one kind: `persistent` (a disk kept across stop/start) or `network` (one network volume). */
export const PodMounts = Closed({
  persistent: Type.Optional(PersistentMount),
  network: Type.Optional(Type.Array(NetworkMount, { maxItems: 1 })),
})
export type PodMounts = Static<typeof PodMounts>

export const PodGpuCreate = Closed({
  id: Type.String({ minLength: 1, description: 'GPU type id from the catalog' }),
  count: Type.Optional(Type.Integer({ minimum: 1, maximum: 128, description: 'default 1' })),
  allowedCudaVersions: Type.Optional(
    Type.Array(CudaVersion, { description: 'host CUDA versions accepted, exact match; [] = any' }),
  ),
  minCudaVersion: Type.Optional(CudaVersion),
})
export type PodGpuCreate = Static<typeof PodGpuCreate>

export const PodCpuCreate = Closed({
  id: Type.String({ minLength: 1, description: 'CPU flavor id from the catalog' }),
  vcpuCount: Type.Integer({ minimum: 2, maximum: 1024, description: 'a power of two valid for the flavor' }),
})
export type PodCpuCreate = Static<typeof PodCpuCreate>

/** POST /v2/pods. Exactly one of `gpu`/`cpu`; `image` unless `templateId`. */
export const CreatePod = Closed({
  name: Type.String({ minLength: 1 }),
  templateId: Type.Optional(Type.String({ minLength: 1 })),
  ...ContainerSettingsInput,
  cloud: Type.Optional(Type.Enum(['SECURE', 'COMMUNITY'], { description: 'default SECURE' })),
  dataCenterIds: Type.Optional(
    Type.Array(Type.String({ minLength: 1 }), { uniqueItems: true, description: 'omit or [] = any' }),
  ),
  globalNetworking: Type.Optional(
    Type.Boolean({
      description:
        'a private IP reachable across data centers; needs an NVIDIA GPU and a data center with globalNetwork',
    }),
  ),
  gpu: Type.Optional(PodGpuCreate),
  cpu: Type.Optional(PodCpuCreate),
  mounts: Type.Optional(PodMounts),
  startJupyter: Type.Optional(
    Type.Boolean({ description: 'inject a generated JUPYTER_PASSWORD unless env sets it; never returned' }),
  ),
  startSsh: Type.Optional(
    Type.Boolean({ description: "inject PUBLIC_KEY with the account's SSH keys unless env sets it; never returned" }),
  ),
})
export type CreatePod = Static<typeof CreatePod>

/** PATCH /v2/pods/{id}: every field optional. */
export const UpdatePod = Closed({
  name: Type.Optional(Type.String({ minLength: 1 })),
  templateId: Type.Optional(
    Type.String({ minLength: 1, description: 'applies the template container settings once (never its mount)' }),
  ),
  ...ContainerSettingsInput,
  mounts: Type.Optional(PodMounts),
  locked: Type.Optional(Type.Boolean({ description: 'a locked pod cannot be stopped or restarted' })),
  globalNetworking: Type.Optional(Type.Boolean({ description: 'applies at the next start' })),
})
export type UpdatePod = Static<typeof UpdatePod>

/** POST /v2/pods/{id}/action. */
export const PodActionBody = Closed({ action: PodAction })
export type PodActionBody = Static<typeof PodActionBody>

export const SshEndpoint = Type.Object({
  host: Type.String(),
  port: Type.Integer(),
  username: Type.String(),
  command: Type.String(),
})
export type SshEndpoint = Static<typeof SshEndpoint>

export const PodRuntimePort = Type.Object({
  private: Type.Integer(),
  public: Type.Union([Type.Integer(), Type.Null()]),
  type: Type.Enum(['http', 'tcp']),
  ip: Type.Union([Type.String(), Type.Null()]),
})

/** Live metrics of a RUNNING pod; utilisations are integers 0-100. */
export const PodRuntime = Type.Object({
  uptime: Type.Integer({ description: 'seconds since the pod last started' }),
  gpus: Type.Array(Type.Object({ util: Type.Integer(), memoryUtil: Type.Integer() })),
  cpu: Type.Object({ util: Type.Integer() }),
  memory: Type.Object({ util: Type.Integer() }),
  ports: Type.Array(PodRuntimePort),
})
export type PodRuntime = Static<typeof PodRuntime>

export const PodClusterRole = Type.Enum(['SLURM_CONTROLLER', 'SLURM_COMPUTE', 'RAY_HEAD', 'RAY_WORKER'])

export const PodCluster = Type.Object(
  {
    id: Type.String(),
    rank: Type.Union([Type.Integer(), Type.Null()], { description: '0 = primary' }),
    role: Type.Optional(PodClusterRole),
    ip: Type.Optional(Type.String({ description: 'address on the cluster network' })),
  },
  { additionalProperties: false },
)
export type PodCluster = Static<typeof PodCluster>

/** A pod as returned: every key present except gpu, cpu and cluster. */
export const Pod = Type.Object({
  id: Id,
  name: Type.String(),
  status: PodStatus,
  actions: Type.Array(PodAction, { description: 'the actions valid now' }),
  cloud: Cloud,
  ...ContainerSettings,
  mounts: Type.Object(
    {
      persistent: Type.Optional(Type.Object({ size: Type.Integer(), path: Type.String() })),
      network: Type.Optional(Type.Array(Type.Object({ volumeId: Type.String(), path: Type.String() }))),
    },
    { description: '{} when there is none' },
  ),
  gpu: Type.Optional(Type.Object({ id: Type.String(), count: Type.Integer() })),
  cpu: Type.Optional(
    Type.Object({
      id: Type.String(),
      vcpuCount: Type.Integer(),
      memory: Type.Integer({ minimum: 1, description: 'GB' }),
    }),
  ),
  dataCenterId: Type.Union([Type.String(), Type.Null()], { description: 'null until placed' }),
  cudaVersion: Type.Union([Type.String(), Type.Null()], { description: 'host CUDA version; kept while EXITED' }),
  ssh: Type.Object({ proxy: Type.Union([SshEndpoint, Type.Null()]), direct: Type.Union([SshEndpoint, Type.Null()]) }),
  cluster: Type.Optional(PodCluster),
  template: Type.Null({ description: 'always null' }),
  cost: Type.Number({ description: 'USD per hour; 0 when EXITED or TERMINATED' }),
  locked: Type.Boolean(),
  globalNetworking: Type.Object({
    enabled: Type.Boolean(),
    ip: Type.Optional(Type.String()),
    internalDns: Type.Optional(Type.String()),
  }),
  runtime: Type.Union([PodRuntime, Type.Null()], { description: 'null unless RUNNING' }),
  createdAt: DateTime,
  startedAt: Type.Union([DateTime, Type.Null()], { description: 'the latest start; null before the first' }),
})
export type Pod = Static<typeof Pod>

export const PodList = Type.Object({ pods: Type.Array(Pod) })
export type PodList = Static<typeof PodList>

export const PodListQuery = Type.Object({
  includeClusterPods: Type.Optional(
    Type.Boolean({ default: false, description: 'also list pods that belong to clusters' }),
  ),
})
export type PodListQuery = Static<typeof PodListQuery>

/**
 * How to reach a pod now (Hangar extension, for people): links to its HTTP ports, SSH only where it
 * answers, and why it is in ERROR.
 */
export const PodConnections = Type.Object({
  error: Type.Union([Type.String(), Type.Null()], {
    description: 'why the pod is in ERROR (or last failed); null when nothing failed',
  }),
  http: Type.Array(
    Type.Object({
      port: Type.Integer(),
      url: Type.String({
        description: 'opens the port through /proxy in a browser (no Authorization header needed) until expiresAt',
      }),
      expiresAt: Type.String({ format: 'date-time' }),
    }),
  ),
  ssh: Type.Union([Type.Object({ command: Type.String() }), Type.Null()], {
    description: 'null unless 22/tcp is mapped and answered with an SSH identification line just now',
  }),
})
export type PodConnections = Static<typeof PodConnections>
