import { Type, type Static } from 'typebox'
import { CudaVersion, Id } from './common.js'

export const Availability = Type.Enum(['NONE', 'LOW', 'MEDIUM', 'HIGH'])
export type Availability = Static<typeof Availability>

export const Manufacturer = Type.Enum(['NVIDIA', 'AMD', 'UNKNOWN'])

export const Region = Type.Enum([
  'NORTH_AMERICA',
  'SOUTH_AMERICA',
  'EUROPE',
  'ASIA',
  'MIDDLE_EAST',
  'AFRICA',
  'OCEANIA',
  'ANTARCTICA',
  'UNKNOWN',
])
export const Compliance = Type.Enum([
  'GDPR',
  'ISO_IEC_27001',
  'ISO_14001',
  'PCI_DSS',
  'HITRUST',
  'SOC_1_TYPE_2',
  'SOC_2_TYPE_2',
  'SOC_3_TYPE_2',
  'ITAR',
  'FISMA_HIGH',
  'HIPAA',
  'RENEWABLE',
])
export const NetworkVolumeType = Type.Enum(['STANDARD', 'HIGH_PERFORMANCE'])
export type NetworkVolumeType = Static<typeof NetworkVolumeType>

const DataCenterAvailability = Type.Array(
  Type.Object({ id: Type.String(), name: Type.String(), availability: Availability }),
)

export const GpuType = Type.Object({
  id: Type.String({ description: 'display name; the value of pod gpu.id and of excludedTypes' }),
  name: Type.String(),
  pool: Type.Union([Type.String(), Type.Null()], {
    description: 'serverless pool id; null when the type is in no pool',
  }),
  manufacturer: Manufacturer,
  memory: Type.Integer({ description: 'GB' }),
  secure: Type.Boolean(),
  community: Type.Boolean(),
  price: Type.Object({ secure: Type.Number(), community: Type.Number(), serverless: Type.Optional(Type.Number()) }),
  maxCount: Type.Object({ secure: Type.Integer(), community: Type.Integer() }),
  virtual: Type.Optional(
    Type.Boolean({ description: 'Hangar extension: simulated GPUs of a machine without real ones' }),
  ),
  availability: Type.Optional(Availability),
  dataCenters: Type.Optional(DataCenterAvailability),
  cudaVersions: Type.Optional(Type.Array(Type.Object({ version: CudaVersion, available: Type.Boolean() }))),
  stock: Type.Optional(
    Type.Object(
      { total: Type.Integer(), free: Type.Integer() },
      { description: 'Hangar extension: GPUs of this type in the fleet' },
    ),
  ),
})
export type GpuType = Static<typeof GpuType>

export const CpuFlavor = Type.Object({
  id: Type.String(),
  name: Type.String(),
  group: Type.String(),
  vcpu: Type.Object({ min: Type.Integer(), max: Type.Integer() }),
  ramGbPerVcpu: Type.Number(),
  price: Type.Object({ securePerVcpu: Type.Number(), serverlessPerVcpu: Type.Number() }),
  availability: Type.Optional(Availability),
  dataCenters: Type.Optional(DataCenterAvailability),
  stock: Type.Optional(
    Type.Object(
      { totalVcpu: Type.Integer(), freeVcpu: Type.Integer() },
      { description: 'Hangar extension: vCPUs in the fleet' },
    ),
  ),
})
export type CpuFlavor = Static<typeof CpuFlavor>

export const DataCenter = Type.Object({
  id: Type.String(),
  name: Type.String(),
  region: Region,
  globalNetwork: Type.Boolean(),
  networkVolumeTypes: Type.Array(NetworkVolumeType),
  compliance: Type.Array(Compliance),
  gpuAvailability: Type.Optional(
    Type.Array(Type.Object({ id: Type.String(), name: Type.String(), availability: Availability })),
  ),
  cpuAvailability: Type.Optional(
    Type.Array(Type.Object({ id: Type.String(), name: Type.String(), availability: Availability })),
  ),
})
export type DataCenter = Static<typeof DataCenter>

export const GpuList = Type.Object({ gpus: Type.Array(GpuType) })
export type GpuList = Static<typeof GpuList>
export const CpuList = Type.Object({ cpus: Type.Array(CpuFlavor) })
export type CpuList = Static<typeof CpuList>
export const DataCenterList = Type.Object({ dataCenters: Type.Array(DataCenter) })
export type DataCenterList = Static<typeof DataCenterList>

/** Comma-separated list parameter, e.g. `regions=EUROPE,ASIA`. */
const CsvParam = Type.String({ minLength: 1 })

export const GpuQuery = Type.Object({
  include: Type.Optional(Type.String({ description: 'AVAILABILITY' })),
  product: Type.Optional(Type.String({ description: 'POD, CLUSTER or SERVERLESS; required with include' })),
  count: Type.Optional(Type.Integer({ minimum: 1, maximum: 128 })),
  cloud: Type.Optional(Type.Enum(['SECURE', 'COMMUNITY'])),
  countryCodes: Type.Optional(CsvParam),
  cudaVersions: Type.Optional(CsvParam),
  minCudaVersion: Type.Optional(Type.String({ pattern: '^\\d+(\\.\\d+)?$' })),
})
export type GpuQuery = Static<typeof GpuQuery>

export const CpuQuery = Type.Object({
  include: Type.Optional(Type.String({ description: 'AVAILABILITY' })),
  product: Type.Optional(Type.String({ description: 'POD or SERVERLESS; required with include' })),
  vcpuCount: Type.Optional(Type.Integer({ minimum: 2, maximum: 1024 })),
})
export type CpuQuery = Static<typeof CpuQuery>

export const DataCenterQuery = Type.Object({
  include: Type.Optional(Type.String({ description: 'GPU_AVAILABILITY, CPU_AVAILABILITY' })),
  regions: Type.Optional(CsvParam),
  networkVolumeTypes: Type.Optional(CsvParam),
  compliance: Type.Optional(CsvParam),
  globalNetwork: Type.Optional(Type.Boolean()),
})
export type DataCenterQuery = Static<typeof DataCenterQuery>

export const DataCenterByIdQuery = Type.Object({ include: Type.Optional(Type.String()) })

export const CatalogId = Type.Object({ id: Id })
