import { Option, type Command } from 'commander'
import type { BillingHistory } from '../../contract/billing.js'
import { clientCommand, clientFor, intOption, type ClientOptions } from '../clientCommand.js'
import { print, renderObject, renderTable, type Column } from '../output.js'

type Row = BillingHistory['records'][number]

interface BillingOptions extends ClientOptions {
  bucketSize?: string
  startTime?: string
  endTime?: string
  lastN?: number
  grouping?: string
  podId?: string
  gpuId?: string
  endpointId?: string
  networkVolumeId?: string
  clusterId?: string
  account?: string
}

/** The subcommands: route, what it shows, its record keys and amounts, and the options beyond the range. */
const HISTORIES: Array<{
  name: string
  route: string
  description: string
  keys: string[]
  amounts: string[]
  extra: Array<'grouping-pods' | 'grouping-serverless' | 'pod' | 'gpu' | 'endpoint' | 'cluster'>
}> = [
  {
    name: 'summary',
    route: '',
    description: 'everything billed, per bucket (GET /v2/billing)',
    keys: [],
    amounts: [
      'podGpuAmount',
      'podCpuAmount',
      'podDiskAmount',
      'serverlessGpuAmount',
      'serverlessCpuAmount',
      'serverlessDiskAmount',
      'storageStandardAmount',
      'storageHighPerformanceAmount',
      'clusterGpuAmount',
    ],
    extra: [],
  },
  {
    name: 'pods',
    route: 'pods',
    description: 'pod billing, by GPU type or by pod',
    keys: ['podId', 'gpuId'],
    amounts: ['gpuAmount', 'cpuAmount', 'diskAmount'],
    extra: ['grouping-pods', 'pod', 'gpu'],
  },
  {
    name: 'serverless',
    route: 'serverless',
    description: 'serverless billing, by endpoint, worker (--grouping podId) or GPU type',
    keys: ['serverlessId', 'podId', 'gpuId'],
    amounts: ['gpuAmount', 'cpuAmount', 'diskAmount', 'feeAmount'],
    extra: ['grouping-serverless', 'endpoint', 'pod', 'gpu'],
  },
  {
    name: 'network-volumes',
    route: 'network-volumes',
    description: 'network volume billing, by volume',
    keys: ['networkVolumeId'],
    amounts: ['standardAmount', 'highPerformanceAmount'],
    extra: [],
  },
  {
    name: 'clusters',
    route: 'clusters',
    description: 'instant cluster billing, by cluster',
    keys: ['clusterId'],
    amounts: ['gpuAmount', 'diskAmount', 'networkingAmount'],
    extra: ['cluster'],
  },
]

/** `hangar billing`: the /v2/billing histories, as a table of buckets or as the API's JSON. */
export function registerBilling(program: Command): void {
  const group = program
    .command('billing')
    .description('what your pods, workers, volumes and clusters cost, bucketed (USD)')
  for (const h of HISTORIES) {
    const cmd = clientCommand(group, h.name, h.description)
      .addOption(
        new Option('--bucket-size <size>', 'bucket (UTC; weeks start on Monday); default day').choices([
          'hour',
          'day',
          'week',
          'month',
          'year',
        ]),
      )
      .option('--start-time <time>', 'RFC 3339; snapped down to its bucket; default end - 30 days')
      .option('--end-time <time>', 'RFC 3339, exclusive; snapped up to its bucket; default now')
      .option('--last-n <n>', 'the last N buckets, the current one included (not with a time range)', intOption)
      .option('--account <account>', 'admin keys: the account (id or name) to read')
    if (h.extra.includes('grouping-pods'))
      cmd.addOption(new Option('--grouping <key>', 'group records by; default gpuId').choices(['podId', 'gpuId']))
    if (h.extra.includes('grouping-serverless'))
      cmd.addOption(
        new Option('--grouping <key>', 'group records by (podId = worker); default endpointId').choices([
          'endpointId',
          'podId',
          'gpuId',
        ]),
      )
    if (h.extra.includes('endpoint')) cmd.option('--endpoint-id <id>', 'only this endpoint')
    if (h.extra.includes('pod'))
      cmd.option('--pod-id <id>', h.name === 'serverless' ? 'only this worker' : 'only this pod')
    if (h.extra.includes('gpu')) cmd.option('--gpu-id <id>', 'only this GPU type')
    if (h.extra.includes('cluster')) cmd.option('--cluster-id <id>', 'only this cluster')
    cmd.action(async (opts: BillingOptions) => {
      const history = await clientFor(opts).billing(h.route, {
        bucketSize: opts.bucketSize,
        startTime: opts.startTime,
        endTime: opts.endTime,
        lastN: opts.lastN,
        grouping: opts.grouping,
        podId: opts.podId,
        gpuId: opts.gpuId,
        endpointId: opts.endpointId,
        clusterId: opts.clusterId,
        account: opts.account,
      })
      print(opts, history, () => render(history, h.keys, h.amounts))
    })
  }
}

/** Records as a table (bucket start, keys, total and the amounts), then the totals. */
function render(history: BillingHistory, keys: string[], amounts: string[]): string {
  const columns: Column<Row>[] = [
    { header: 'bucket', value: (r) => String(r.startTime).replace(':00:00.000Z', ':00Z').replace('T00:00Z', '') },
    ...keys.map((k) => ({ header: k, value: (r: Row) => r[k] })),
    ...['totalAmount', ...amounts].map((a) => ({ header: a.replace(/Amount$/, ''), value: (r: Row) => usd(r[a]) })),
  ]
  const q = history.metadata.query
  const totals = Object.fromEntries(
    Object.entries(history.metadata.totals)
      .filter(([k, v]) => k === 'totalAmount' || v !== 0)
      .map(([k, v]) => [k, usd(v)]),
  )
  return [
    `${q.bucketSize} buckets from ${q.startTime} to ${q.endTime}`,
    renderTable(history.records, columns, '(no usage)'),
    '',
    renderObject(totals),
  ].join('\n')
}

function usd(v: unknown): string {
  return typeof v === 'number' ? `$${v.toFixed(6).replace(/0{1,4}$/, '')}` : '-'
}
