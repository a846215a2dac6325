import { Type, type Static, type TSchema } from 'typebox'
import { DateTime } from './common.js'

/** Histogram granularity; weeks start on Monday 00:00 UTC. */
export const BucketSize = Type.Enum(['hour', 'day', 'week', 'month', 'year'], {
  description: 'default day; buckets are UTC, weeks start on Monday',
})

const Filter = (description: string) => Type.Optional(Type.String({ minLength: 1, maxLength: 128, description }))

/** Parameters every billing history takes. */
const common = {
  startTime: Type.Optional(
    Type.String({
      format: 'date-time',
      description: 'default endTime - 30 days; snapped down to the start of its bucket',
    }),
  ),
  endTime: Type.Optional(
    Type.String({ format: 'date-time', description: 'exclusive; default now; snapped up to the end of its bucket' }),
  ),
  bucketSize: Type.Optional(BucketSize),
  lastN: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 10_000,
      description: 'the last N buckets, the current one included; not with startTime/endTime (400)',
    }),
  ),
  account: Filter('Hangar extension, admin keys only: the account (id or name) whose billing to read'),
}

const closed = <T extends Record<string, TSchema>>(props: T) => Type.Object(props, { additionalProperties: false })

export const BillingQuery = closed(common)
export const PodBillingQuery = closed({
  ...common,
  grouping: Type.Optional(
    Type.Enum(['podId', 'gpuId', 'gpuTypeId'], { description: 'default gpuId (gpuTypeId is an alias)' }),
  ),
  podId: Filter('only this pod'),
  gpuId: Filter('only this GPU type'),
})
export const ServerlessBillingQuery = closed({
  ...common,
  grouping: Type.Optional(
    Type.Enum(['endpointId', 'podId', 'gpuId', 'gpuTypeId'], {
      description: 'default endpointId; podId groups by worker; gpuTypeId is an alias of gpuId',
    }),
  ),
  serverlessId: Filter('only this serverless endpoint'),
  endpointId: Filter('alias of serverlessId (the CLI name)'),
  podId: Filter('only this worker'),
  gpuId: Filter('only this GPU type'),
})
export const NetworkVolumeBillingQuery = closed({ ...common, networkVolumeId: Filter('only this network volume') })
export const ClusterBillingQuery = closed({ ...common, clusterId: Filter('only this cluster') })
/** Every parameter any billing route takes, as the service sees it. */
export type AnyBillingQuery = Static<typeof BillingQuery> & {
  grouping?: 'podId' | 'gpuId' | 'gpuTypeId' | 'endpointId'
  podId?: string
  gpuId?: string
  serverlessId?: string
  endpointId?: string
  networkVolumeId?: string
  clusterId?: string
}

const Usd = Type.Number({ description: 'USD, an exact multiple of 0.000001' })
const Key = (description: string) => Type.Union([Type.String(), Type.Null()], { description })
const amounts = (names: string[]) =>
  Object.fromEntries(['totalAmount', ...names].map((n) => [n, Usd])) as Record<string, typeof Usd>
const bucket = { startTime: DateTime, endTime: Type.String({ format: 'date-time', description: 'exclusive' }) }

/** The response of one billing route: its records and what produced them. */
function History(
  keys: Record<string, TSchema>,
  amountNames: string[],
  filters: Record<string, TSchema>,
  uniqueCount?: string,
) {
  const amountsSchema = amounts(amountNames)
  return Type.Object({
    records: Type.Array(Type.Object({ ...bucket, ...keys, ...amountsSchema })),
    metadata: Type.Object({
      query: Type.Object({
        startTime: DateTime,
        endTime: DateTime,
        bucketSize: BucketSize,
        account: Type.Optional(Type.String()),
        ...filters,
      }),
      recordCount: Type.Integer(),
      totals: Type.Object(amountsSchema),
      ...(uniqueCount ? { [uniqueCount]: Type.Integer() } : {}),
    }),
  })
}

const nullable = (names: string[]) => Object.fromEntries(names.map((n) => [n, Key(n)]))

export const AggregateBilling = History(
  {},
  [
    'podGpuAmount',
    'podCpuAmount',
    'podDiskAmount',
    'serverlessGpuAmount',
    'serverlessCpuAmount',
    'serverlessDiskAmount',
    'serverlessFeeAmount',
    'storageStandardAmount',
    'storageHighPerformanceAmount',
    'endpointAmount',
    'clusterGpuAmount',
    'clusterDiskAmount',
    'clusterNetworkingAmount',
  ],
  {},
)
export const PodBilling = History(
  {
    podId: Key('the pod (grouping podId), else null'),
    gpuId: Key('the GPU type; null for CPU pods and under grouping gpuId for CPU usage'),
  },
  ['gpuAmount', 'cpuAmount', 'diskAmount'],
  { grouping: Type.String(), ...nullable(['podId', 'gpuId']) },
  'uniquePodCount',
)
export const ServerlessBilling = History(
  {
    serverlessId: Key('the endpoint (grouping endpointId or podId)'),
    podId: Key('the worker (grouping podId)'),
    gpuId: Key('the GPU type (grouping gpuId or podId)'),
  },
  ['gpuAmount', 'cpuAmount', 'diskAmount', 'feeAmount'],
  { grouping: Type.String(), ...nullable(['serverlessId', 'podId', 'gpuId']) },
  'uniqueServerlessCount',
)
export const EndpointBilling = History({}, [], {})
export const NetworkVolumeBilling = History(
  { networkVolumeId: Key('the network volume') },
  ['standardAmount', 'highPerformanceAmount'],
  nullable(['networkVolumeId']),
  'uniqueNetworkVolumeCount',
)
export const ClusterBilling = History(
  { clusterId: Key('the cluster') },
  ['gpuAmount', 'diskAmount', 'networkingAmount'],
  nullable(['clusterId']),
  'uniqueClusterCount',
)

/** Any billing response, as the service builds it. */
export type BillingHistory = {
  records: Array<Record<string, string | number | null>>
  metadata: { query: Record<string, string | null>; recordCount: number; totals: Record<string, number> } & Record<
    string,
    unknown
  >
}

/** Admin: what each account owes over a range (Hangar extension). */
export const AccountBillingQuery = closed({
  startTime: common.startTime,
  endTime: common.endTime,
  bucketSize: common.bucketSize,
  lastN: common.lastN,
})
export const AccountBillingSummary = Type.Object({
  accounts: Type.Array(
    Type.Object({
      accountId: Type.String(),
      accountName: Type.String(),
      ...AggregateBilling.properties.metadata.properties.totals.properties,
    }),
  ),
  metadata: Type.Object({
    query: Type.Object({ startTime: DateTime, endTime: DateTime, bucketSize: BucketSize }),
    accountCount: Type.Integer(),
    totals: AggregateBilling.properties.metadata.properties.totals,
  }),
})
export type AccountBillingSummary = Static<typeof AccountBillingSummary>
