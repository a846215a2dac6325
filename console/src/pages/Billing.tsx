import { useState } from 'preact/hooks'
import type { Static } from 'typebox'
import type { AccountList } from '../../../src/contract/admin.js'
import type { AggregateBilling } from '../../../src/contract/billing.js'
import { useSession } from '../session.js'
import { StackedBars } from '../StackedBars.js'
import { Field, Loading, Page, useLoad, inputValue } from '../ui.js'

type Aggregate = Static<typeof AggregateBilling>
/** The amounts of a record or of the totals, by name (the contract builds their names from lists). */
type Amounts = Record<string, number>

function amountsOf(r: object): Amounts {
  return Object.fromEntries(Object.entries(r).filter((e): e is [string, number] => typeof e[1] === 'number'))
}

/** What the chart stacks: the aggregate's amounts summed per kind of resource. */
const SERIES: Array<{ name: string; color: string; of: (a: Amounts) => number }> = [
  {
    name: 'Serverless',
    color: '#2f5bea',
    of: (a) => a.serverlessGpuAmount + a.serverlessCpuAmount + a.serverlessDiskAmount + a.serverlessFeeAmount,
  },
  { name: 'Pods', color: '#12b76a', of: (a) => a.podGpuAmount + a.podCpuAmount + a.podDiskAmount },
  { name: 'Storage', color: '#f79009', of: (a) => a.storageStandardAmount + a.storageHighPerformanceAmount },
  {
    name: 'Clusters',
    color: '#9e77ed',
    of: (a) => a.clusterGpuAmount + a.clusterDiskAmount + a.clusterNetworkingAmount,
  },
  { name: 'Public endpoints', color: '#98a2b3', of: (a) => a.endpointAmount },
]

/** Amounts are exact micro-dollars: small ones keep all six decimals rather than showing $0.00. */
const usd = (v: number) =>
  v === 0
    ? '$0'
    : v >= 100
      ? `$${v.toFixed(0)}`
      : v >= 1
        ? `$${v.toFixed(2)}`
        : v >= 0.01
          ? `$${v.toFixed(4)}`
          : `$${v.toFixed(6)}`

const RANGES = { hour: 48, day: 30, week: 12, month: 12 } as const
type Bucket = keyof typeof RANGES

function labelOf(iso: string, bucket: Bucket): string {
  const d = new Date(iso)
  if (bucket === 'hour') return `${String(d.getUTCHours()).padStart(2, '0')}h`
  if (bucket === 'month') return d.toISOString().slice(0, 7)
  return d.toISOString().slice(5, 10)
}

/** What the account was billed per bucket (GET /v2/billing), stacked by kind; admins may pick an account. */
export function Billing() {
  const { client, admin } = useSession()
  const [bucket, setBucket] = useState<Bucket>('day')
  const [account, setAccount] = useState('')
  const accounts = useLoad(
    (signal) => (admin ? client.get<AccountList>('/v2/admin/accounts', signal) : Promise.resolve({ accounts: [] })),
    [admin],
  )
  const q = `bucketSize=${bucket}&lastN=${RANGES[bucket]}${account ? `&account=${encodeURIComponent(account)}` : ''}`
  const { data, error } = useLoad((signal) => client.get<Aggregate>(`/v2/billing?${q}`, signal), [q], 60_000)
  return (
    <Page title="Billing">
      <div class="form row">
        <Field label="Buckets" name="bucketSize">
          <select name="bucketSize" value={bucket} onChange={(e) => setBucket(inputValue<Bucket>(e))}>
            <option value="hour">Hours (last 48)</option>
            <option value="day">Days (last 30)</option>
            <option value="week">Weeks (last 12)</option>
            <option value="month">Months (last 12)</option>
          </select>
        </Field>
        {admin && (
          <Field label="Account" name="account">
            <select name="account" value={account} onChange={(e) => setAccount(inputValue(e))}>
              <option value="">Yours</option>
              {(accounts.data?.accounts ?? []).map((a) => (
                <option key={a.id} value={a.name}>
                  {a.name}
                </option>
              ))}
            </select>
          </Field>
        )}
      </div>
      {!data ? (
        <Loading error={error} what="billing" />
      ) : (
        <>
          <p class="total">
            Total <strong>{usd(data.metadata.totals.totalAmount)}</strong> from{' '}
            {new Date(data.metadata.query.startTime).toLocaleString()} to{' '}
            {new Date(data.metadata.query.endTime).toLocaleString()}
          </p>
          <StackedBars
            bars={data.records.map((r) => ({
              label: labelOf(r.startTime, bucket),
              values: SERIES.map((s) => s.of(amountsOf(r))),
            }))}
            series={SERIES}
            format={usd}
          />
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th>Kind</th>
                  <th>Amount</th>
                </tr>
              </thead>
              <tbody>
                {SERIES.map((s) => (
                  <tr key={s.name}>
                    <td>{s.name}</td>
                    <td>{usd(s.of(amountsOf(data.metadata.totals)))}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </Page>
  )
}
