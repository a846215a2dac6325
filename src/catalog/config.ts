import { Type, type Static } from 'typebox'
import { Compliance, Manufacturer, NetworkVolumeType, Region } from '../contract/catalog.js'
import { CudaVersion } from '../contract/common.js'
import { EngineSetting } from '../runtime/docker/EngineConfig.js'

export const GpuTypeSpec = Type.Object(
  {
    id: Type.String({ minLength: 1 }),
    name: Type.Optional(Type.String()),
    pool: Type.Union([Type.String(), Type.Null()]),
    manufacturer: Manufacturer,
    memory: Type.Integer({ minimum: 1 }),
    price: Type.Object({ secure: Type.Number(), community: Type.Number(), serverless: Type.Optional(Type.Number()) }),
    maxCount: Type.Optional(Type.Integer({ minimum: 1, default: 8 })),
  },
  { additionalProperties: false },
)
export type GpuTypeSpec = Static<typeof GpuTypeSpec>

export const CpuFlavorSpec = Type.Object(
  {
    id: Type.String({ minLength: 1 }),
    name: Type.String(),
    group: Type.String(),
    vcpu: Type.Object({ min: Type.Integer({ minimum: 1 }), max: Type.Integer({ minimum: 1 }) }),
    ramGbPerVcpu: Type.Number({ exclusiveMinimum: 0 }),
    price: Type.Object({ securePerVcpu: Type.Number(), serverlessPerVcpu: Type.Number() }),
  },
  { additionalProperties: false },
)
export type CpuFlavorSpec = Static<typeof CpuFlavorSpec>

export const DataCenterSpec = Type.Object(
  {
    id: Type.String({ minLength: 1 }),
    name: Type.String(),
    region: Region,
    countryCode: Type.Optional(Type.String({ pattern: '^[A-Z]{2}$' })),
    globalNetwork: Type.Boolean({ default: false }),
    networkVolumeTypes: Type.Array(NetworkVolumeType, { default: ['STANDARD'] }),
    compliance: Type.Array(Compliance, { default: [] }),
  },
  { additionalProperties: false },
)
export type DataCenterSpec = Static<typeof DataCenterSpec>

/** `extend` adds to (or replaces by id) the built-in catalog; `replace` uses only what is given. */
export const CatalogConfig = Type.Object(
  {
    mode: Type.Enum(['extend', 'replace'], { default: 'extend' }),
    gpus: Type.Array(GpuTypeSpec, { default: [] }),
    cpus: Type.Array(CpuFlavorSpec, { default: [] }),
    dataCenters: Type.Array(DataCenterSpec, { default: [] }),
  },
  { additionalProperties: false, default: {} },
)
export type CatalogConfig = Static<typeof CatalogConfig>

export const HostGpuSpec = Type.Object(
  {
    typeId: Type.String({ minLength: 1 }),
    count: Type.Integer({ minimum: 1 }),
    cudaVersion: Type.Union([CudaVersion, Type.Null()], { default: null }),
    virtual: Type.Boolean({ default: false }),
    /** Device indices for CUDA_VISIBLE_DEVICES; default 0..count-1. */
    indices: Type.Optional(Type.Array(Type.Integer({ minimum: 0 }))),
  },
  { additionalProperties: false },
)
export type HostGpuSpec = Static<typeof HostGpuSpec>

export const HostSpec = Type.Object(
  {
    id: Type.String({ minLength: 1 }),
    dataCenterId: Type.String({ minLength: 1 }),
    vcpus: Type.Integer({ minimum: 0 }),
    memoryGb: Type.Integer({ minimum: 0 }),
    gpus: Type.Array(HostGpuSpec, { default: [] }),
    /** Its Docker or Podman engine: workers placed here run as its containers. Without one they run as local processes. */
    engine: Type.Optional(EngineSetting),
  },
  { additionalProperties: false },
)
export type HostSpec = Static<typeof HostSpec>

/**
 * The machines Hangar places work on. With no `hosts`, the fleet is this machine as detected at start
 * (cores, memory, NVIDIA GPUs), plus virtual GPUs when it has no real one and `virtualGpus` is on.
 */
export const FleetConfig = Type.Object(
  {
    hosts: Type.Optional(Type.Array(HostSpec)),
    /** Look for NVIDIA GPUs with nvidia-smi when describing this machine. */
    detectGpus: Type.Boolean({ default: true }),
    /** Add the default virtual GPUs when this machine has no real GPU. */
    virtualGpus: Type.Boolean({ default: true }),
    /**
     * vCPUs offered per physical core of this machine. Local process workers mostly wait on I/O, so a
     * 2-core development machine would otherwise fit a single 2-vCPU worker.
     */
    cpuOversubscription: Type.Number({ minimum: 1, default: 8 }),
    /** The data center this machine belongs to. */
    localDataCenterId: Type.String({ minLength: 1, default: 'LOCAL-1' }),
  },
  { additionalProperties: false, default: {} },
)
export type FleetConfig = Static<typeof FleetConfig>
