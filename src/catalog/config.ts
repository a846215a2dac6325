import { Type, type Static } from 'typebox'
import { Compliance, Manufacturer, NetworkVolumeType, Region } from '../contract/catalog.js'
import { CudaVersion } from '../contract/common.js'
import { described } from '../described.js'
import { EngineSetting } from '../runtime/docker/EngineConfig.js'

export const GpuTypeSpec = Type.Object(
  {
    id: Type.String({
      minLength: 1,
      description:
        'GPU type id, as endpoints and pods ask for it (`NVIDIA GeForce RTX 4090`); an id of the built-in catalog replaces that entry.',
    }),
    name: Type.Optional(Type.String({ description: 'Display name; the id when unset.' })),
    pool: Type.Union([Type.String(), Type.Null()], {
      description:
        'The GPU pool serverless endpoints name in `gpu.pools` (`ADA_24`); null: not offered to serverless endpoints.',
    }),
    manufacturer: described(Manufacturer, 'The maker (`NVIDIA`, `AMD`, ...).'),
    memory: Type.Integer({ minimum: 1, description: 'GPU memory, GB.' }),
    price: Type.Object(
      {
        secure: Type.Number({ description: 'USD per GPU-hour of a pod on SECURE cloud.' }),
        community: Type.Number({ description: 'USD per GPU-hour of a pod on COMMUNITY cloud.' }),
        serverless: Type.Optional(Type.Number({ description: 'USD per GPU-hour of a serverless worker.' })),
      },
      { description: 'Prices, USD per GPU-hour (see docs/billing.md).' },
    ),
    maxCount: Type.Optional(
      Type.Integer({ minimum: 1, default: 8, description: 'Most GPUs of this type one pod or worker may ask for.' }),
    ),
  },
  { additionalProperties: false },
)
export type GpuTypeSpec = Static<typeof GpuTypeSpec>

export const CpuFlavorSpec = Type.Object(
  {
    id: Type.String({
      minLength: 1,
      description:
        'CPU flavor id, as endpoints and pods ask for it (`cpu3c`); an id of the built-in catalog replaces that entry.',
    }),
    name: Type.String({ description: 'Display name.' }),
    group: Type.String({ description: 'The family the flavor belongs to (`cpu3`).' }),
    vcpu: Type.Object(
      {
        min: Type.Integer({ minimum: 1, description: 'Fewest vCPUs.' }),
        max: Type.Integer({ minimum: 1, description: 'Most vCPUs.' }),
      },
      { description: 'vCPU counts one pod or worker may ask for.' },
    ),
    ramGbPerVcpu: Type.Number({ exclusiveMinimum: 0, description: 'Memory that comes with each vCPU, GB.' }),
    price: Type.Object(
      {
        securePerVcpu: Type.Number({ description: 'USD per vCPU-hour of a pod.' }),
        serverlessPerVcpu: Type.Number({ description: 'USD per vCPU-hour of a serverless worker.' }),
      },
      { description: 'Prices, USD per vCPU-hour (see docs/billing.md).' },
    ),
  },
  { additionalProperties: false },
)
export type CpuFlavorSpec = Static<typeof CpuFlavorSpec>

export const DataCenterSpec = Type.Object(
  {
    id: Type.String({
      minLength: 1,
      description: 'Data center id, as endpoints, pods, volumes and `fleet.hosts[].dataCenterId` name it.',
    }),
    name: Type.String({ description: 'Display name.' }),
    region: described(Region, 'Region, as the catalog reports it (`EUROPE`, ...).'),
    countryCode: Type.Optional(Type.String({ pattern: '^[A-Z]{2}$', description: 'ISO 3166-1 alpha-2 country code.' })),
    globalNetwork: Type.Boolean({
      default: false,
      description: 'Offers global networking: pods asking for `globalNetworking` are placed only in such data centers.',
    }),
    networkVolumeTypes: Type.Array(NetworkVolumeType, {
      default: ['STANDARD'],
      description: 'Network volume types offered here.',
    }),
    compliance: Type.Array(Compliance, {
      default: [],
      description: 'Compliance certifications the catalog reports (and filters by).',
    }),
  },
  { additionalProperties: false },
)
export type DataCenterSpec = Static<typeof DataCenterSpec>

export const CatalogConfig = Type.Object(
  {
    mode: Type.Enum(['extend', 'replace'], {
      default: 'extend',
      description: '`extend` adds to (or replaces by id) the built-in catalog; `replace` uses only what is given.',
    }),
    gpus: Type.Array(GpuTypeSpec, { default: [], description: 'GPU types.' }),
    cpus: Type.Array(CpuFlavorSpec, { default: [], description: 'CPU flavors.' }),
    dataCenters: Type.Array(DataCenterSpec, { default: [], description: 'Data centers.' }),
  },
  {
    additionalProperties: false,
    default: {},
    description:
      'What can be asked for: GPU types, CPU flavors and data centers, with their prices (see docs/configuration.md).',
  },
)
export type CatalogConfig = Static<typeof CatalogConfig>

export const HostGpuSpec = Type.Object(
  {
    typeId: Type.String({ minLength: 1, description: 'The catalog GPU type id of these GPUs.' }),
    count: Type.Integer({ minimum: 1, description: 'How many the host has.' }),
    cudaVersion: Type.Union([CudaVersion, Type.Null()], {
      default: null,
      description:
        "The host's CUDA version (`12.4`), matched against endpoints' `allowedCudaVersions`/`minCudaVersion`.",
    }),
    virtual: Type.Boolean({
      default: false,
      description:
        'Not real GPUs: marked `"virtual": true` in the catalog, so GPU endpoints can be developed anywhere.',
    }),
    indices: Type.Optional(
      Type.Array(Type.Integer({ minimum: 0 }), {
        description: 'Device indices for CUDA_VISIBLE_DEVICES; default 0..count-1.',
      }),
    ),
  },
  { additionalProperties: false },
)
export type HostGpuSpec = Static<typeof HostGpuSpec>

export const HostSpec = Type.Object(
  {
    id: Type.String({ minLength: 1, description: "Host id, shown as a worker's `hostId`." }),
    dataCenterId: Type.String({ minLength: 1, description: 'The catalog data center the host is in.' }),
    vcpus: Type.Integer({ minimum: 0, description: 'vCPUs the host offers to CPU flavors.' }),
    memoryGb: Type.Integer({ minimum: 0, description: 'Memory the host offers, GB.' }),
    gpus: Type.Array(HostGpuSpec, { default: [], description: 'The GPUs of the host.' }),
    engine: Type.Optional(
      described(
        EngineSetting,
        'Its Docker or Podman engine: workers placed here run as its containers. Without one they run as local processes.',
      ),
    ),
  },
  { additionalProperties: false },
)
export type HostSpec = Static<typeof HostSpec>

export const FleetConfig = Type.Object(
  {
    hosts: Type.Optional(
      Type.Array(HostSpec, {
        description:
          'The machines of the fleet (see docs/containers.md, "Several hosts"); this machine alone when unset.',
      }),
    ),
    detectGpus: Type.Boolean({
      default: true,
      description: 'Look for NVIDIA GPUs with nvidia-smi when describing this machine.',
    }),
    virtualGpus: Type.Boolean({
      default: true,
      description: 'Add the default virtual GPUs when this machine has no real GPU.',
    }),
    cpuOversubscription: Type.Number({
      minimum: 1,
      default: 8,
      description:
        'vCPUs offered per physical core of this machine. Local process workers mostly wait on I/O, so a 2-core development machine would otherwise fit a single 2-vCPU worker.',
    }),
    localDataCenterId: Type.String({
      minLength: 1,
      default: 'LOCAL-1',
      description: 'The data center this machine belongs to.',
    }),
  },
  {
    additionalProperties: false,
    default: {},
    description:
      'The machines Hangar places work on. With no `hosts`, the fleet is this machine as detected at start (cores, memory, NVIDIA GPUs), plus virtual GPUs when it has no real one and `virtualGpus` is on.',
  },
)
export type FleetConfig = Static<typeof FleetConfig>
