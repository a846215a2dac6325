import type { UsageComponent, UsageProduct } from './usage.js'

/** The histories of `/v2/billing`: `aggregate` is `/v2/billing` itself. */
export type BillingRoute = 'aggregate' | 'pods' | 'serverless' | 'endpoints' | 'networkVolumes' | 'clusters'

/** How pod and serverless records are grouped (the spec's CLI `--grouping`). */
export type Grouping = 'podId' | 'gpuId' | 'endpointId'

/** Per route: the product it reads, its amount fields by component, its record keys and unique count. */
export interface RouteShape {
  products: readonly UsageProduct[]
  /** `${product}.${component}` -> amount field of the record (every field also adds to `totalAmount`). */
  fields: Record<string, string>
  /** Record key fields, always present (null when not what the records are grouped by). */
  keys: readonly string[]
  groupings: readonly Grouping[]
  defaultGrouping: Grouping | null
  /** Metadata key counting the distinct resources behind the records. */
  uniqueCount: string | null
}

const f = (product: UsageProduct, map: Partial<Record<UsageComponent, string>>) =>
  Object.fromEntries(Object.entries(map).map(([c, field]) => [`${product}.${c}`, field]))

export const ROUTES: Record<BillingRoute, RouteShape> = {
  aggregate: {
    products: ['pod', 'serverless', 'volume', 'cluster', 'endpoint'],
    fields: {
      ...f('pod', { gpu: 'podGpuAmount', cpu: 'podCpuAmount', disk: 'podDiskAmount' }),
      ...f('serverless', {
        gpu: 'serverlessGpuAmount',
        cpu: 'serverlessCpuAmount',
        disk: 'serverlessDiskAmount',
        fee: 'serverlessFeeAmount',
      }),
      ...f('volume', { standard: 'storageStandardAmount', highPerformance: 'storageHighPerformanceAmount' }),
      ...f('endpoint', { gpu: 'endpointAmount', cpu: 'endpointAmount' }),
      ...f('cluster', { gpu: 'clusterGpuAmount', disk: 'clusterDiskAmount', networking: 'clusterNetworkingAmount' }),
    },
    keys: [],
    groupings: [],
    defaultGrouping: null,
    uniqueCount: null,
  },
  pods: {
    products: ['pod'],
    fields: f('pod', { gpu: 'gpuAmount', cpu: 'cpuAmount', disk: 'diskAmount' }),
    keys: ['podId', 'gpuId'],
    groupings: ['podId', 'gpuId'],
    defaultGrouping: 'gpuId',
    uniqueCount: 'uniquePodCount',
  },
  serverless: {
    products: ['serverless'],
    fields: f('serverless', { gpu: 'gpuAmount', cpu: 'cpuAmount', disk: 'diskAmount', fee: 'feeAmount' }),
    keys: ['serverlessId', 'podId', 'gpuId'],
    groupings: ['endpointId', 'podId', 'gpuId'],
    defaultGrouping: 'endpointId',
    uniqueCount: 'uniqueServerlessCount',
  },
  endpoints: { products: ['endpoint'], fields: {}, keys: [], groupings: [], defaultGrouping: null, uniqueCount: null },
  networkVolumes: {
    products: ['volume'],
    fields: f('volume', { standard: 'standardAmount', highPerformance: 'highPerformanceAmount' }),
    keys: ['networkVolumeId'],
    groupings: [],
    defaultGrouping: null,
    uniqueCount: 'uniqueNetworkVolumeCount',
  },
  clusters: {
    products: ['cluster'],
    fields: f('cluster', { gpu: 'gpuAmount', disk: 'diskAmount', networking: 'networkingAmount' }),
    keys: ['clusterId'],
    groupings: [],
    defaultGrouping: null,
    uniqueCount: 'uniqueClusterCount',
  },
}

/** The amount fields of a route's records, `totalAmount` first. */
export function amountFields(route: BillingRoute): string[] {
  return ['totalAmount', ...new Set(Object.values(ROUTES[route].fields))]
}
