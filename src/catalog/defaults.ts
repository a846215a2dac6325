import type { CpuFlavorSpec, DataCenterSpec, GpuTypeSpec, HostGpuSpec } from './config.js'

type Row = [
  id: string,
  pool: string | null,
  memory: number,
  secure: number,
  community: number,
  serverless: number | null,
  maxCount?: number,
]

// Display-name ids, pools and memory follow the public GPU catalog of comparable platforms; prices are USD/h
// per GPU and only indicative (Hangar bills nothing yet).
const NVIDIA: Row[] = [
  ['NVIDIA RTX A4000', 'AMPERE_16', 16, 0.25, 0.17, 0.00016 * 3600],
  ['NVIDIA RTX A4500', 'AMPERE_16', 20, 0.25, 0.19, 0.00016 * 3600],
  ['NVIDIA RTX A5000', 'AMPERE_24', 24, 0.27, 0.16, 0.00019 * 3600],
  ['NVIDIA GeForce RTX 3090', 'AMPERE_24', 24, 0.43, 0.22, 0.00019 * 3600],
  ['NVIDIA GeForce RTX 4090', 'ADA_24', 24, 0.69, 0.34, 0.00031 * 3600],
  ['NVIDIA L4', 'ADA_24', 24, 0.43, 0.28, 0.00031 * 3600],
  ['NVIDIA RTX A6000', 'AMPERE_48', 48, 0.49, 0.33, 0.00034 * 3600],
  ['NVIDIA A40', 'AMPERE_48', 48, 0.4, 0.35, 0.00034 * 3600],
  ['NVIDIA L40S', 'ADA_48_PRO', 48, 0.86, 0.79, 0.00053 * 3600],
  ['NVIDIA L40', 'ADA_48_PRO', 48, 0.99, 0.69, 0.00053 * 3600],
  ['NVIDIA RTX 6000 Ada Generation', 'ADA_48_PRO', 48, 0.77, 0.74, 0.00053 * 3600],
  ['NVIDIA A100 80GB PCIe', 'AMPERE_80', 80, 1.64, 1.19, 0.00076 * 3600],
  ['NVIDIA A100-SXM4-80GB', 'AMPERE_80', 80, 1.74, 1.39, 0.00076 * 3600],
  ['NVIDIA H100 PCIe', 'ADA_80_PRO', 80, 2.39, 1.99, 0.00116 * 3600],
  ['NVIDIA H100 80GB HBM3', 'ADA_80_PRO', 80, 2.69, 2.39, 0.00116 * 3600],
  ['NVIDIA H200', 'HOPPER_141', 141, 3.59, 3.59, 0.00155 * 3600],
  ['NVIDIA GeForce RTX 3070', null, 8, 0.13, 0.13, null],
  ['NVIDIA GeForce RTX 5090', null, 32, 0.94, 0.69, null],
  ['NVIDIA B200', null, 180, 5.99, 5.99, null],
]

/** The built-in GPU types. */
export const DEFAULT_GPUS: GpuTypeSpec[] = [
  ...NVIDIA.map(([id, pool, memory, secure, community, serverless, maxCount]) => ({
    id,
    name: id.replace(/^NVIDIA (GeForce )?/, ''),
    pool,
    manufacturer: 'NVIDIA' as const,
    memory,
    price:
      serverless === null
        ? { secure, community }
        : { secure, community, serverless: Math.round(serverless * 10000) / 10000 },
    maxCount: maxCount ?? 8,
  })),
  {
    id: 'AMD Instinct MI300X OAM',
    name: 'MI300X',
    pool: null,
    manufacturer: 'AMD',
    memory: 192,
    price: { secure: 2.49, community: 2.49 },
    maxCount: 8,
  },
]

/** The built-in CPU flavors: compute-, general- and memory-optimised, two generations. */
export const DEFAULT_CPUS: CpuFlavorSpec[] = [
  {
    id: 'cpu3c',
    name: 'Compute-Optimized (3rd gen)',
    group: 'cpu3',
    vcpu: { min: 2, max: 32 },
    ramGbPerVcpu: 2,
    price: { securePerVcpu: 0.03, serverlessPerVcpu: 0.036 },
  },
  {
    id: 'cpu3g',
    name: 'General Purpose (3rd gen)',
    group: 'cpu3',
    vcpu: { min: 2, max: 32 },
    ramGbPerVcpu: 4,
    price: { securePerVcpu: 0.04, serverlessPerVcpu: 0.048 },
  },
  {
    id: 'cpu3m',
    name: 'Memory-Optimized (3rd gen)',
    group: 'cpu3',
    vcpu: { min: 2, max: 16 },
    ramGbPerVcpu: 8,
    price: { securePerVcpu: 0.05, serverlessPerVcpu: 0.06 },
  },
  {
    id: 'cpu5c',
    name: 'Compute-Optimized (5th gen)',
    group: 'cpu5',
    vcpu: { min: 2, max: 64 },
    ramGbPerVcpu: 2,
    price: { securePerVcpu: 0.04, serverlessPerVcpu: 0.048 },
  },
  {
    id: 'cpu5g',
    name: 'General Purpose (5th gen)',
    group: 'cpu5',
    vcpu: { min: 2, max: 64 },
    ramGbPerVcpu: 4,
    price: { securePerVcpu: 0.05, serverlessPerVcpu: 0.06 },
  },
  {
    id: 'cpu5m',
    name: 'Memory-Optimized (5th gen)',
    group: 'cpu5',
    vcpu: { min: 2, max: 32 },
    ramGbPerVcpu: 8,
    price: { securePerVcpu: 0.06, serverlessPerVcpu: 0.072 },
  },
]

/** The data center of this machine; other data centers come from the config file with their hosts. */
export function defaultDataCenters(localId: string): DataCenterSpec[] {
  return [
    {
      id: localId,
      name: 'This machine',
      region: 'UNKNOWN',
      globalNetwork: false,
      networkVolumeTypes: ['STANDARD', 'HIGH_PERFORMANCE'],
      compliance: [],
    },
  ]
}

/**
 * GPUs simulated on a machine without a real one, so GPU endpoints can be developed anywhere. Several pools,
 * so placement can fall through from a full pool to the next.
 */
export const DEFAULT_VIRTUAL_GPUS: HostGpuSpec[] = [
  { typeId: 'NVIDIA GeForce RTX 4090', count: 2, cudaVersion: '12.4', virtual: true },
  { typeId: 'NVIDIA L4', count: 1, cudaVersion: '12.2', virtual: true },
  { typeId: 'NVIDIA RTX A5000', count: 2, cudaVersion: '12.1', virtual: true },
  { typeId: 'NVIDIA A40', count: 1, cudaVersion: '11.8', virtual: true },
  { typeId: 'NVIDIA L40S', count: 1, cudaVersion: '12.8', virtual: true },
  { typeId: 'NVIDIA H100 80GB HBM3', count: 1, cudaVersion: '12.8', virtual: true },
]
