import { InvalidArgumentError, type Command } from 'commander'
import type { AccountQuotas, SetQuotas } from '../../contract/quota.js'
import { clientCommand, clientFor, type ClientOptions } from '../clientCommand.js'
import { print, renderTable, type Column } from '../output.js'

type Row = { quota: string; use: number; limit: number | null }
const rowColumns: Column<Row>[] = [
  { header: 'quota', value: (r) => r.quota },
  { header: 'use', value: (r) => r.use },
  { header: 'limit', value: (r) => (r.limit === null ? '-' : r.limit) },
]
const listColumns: Column<AccountQuotas>[] = [
  { header: 'account', value: (a) => a.accountName },
  { header: 'gpus', value: (a) => usage(a.quotas.gpus) },
  { header: 'workers', value: (a) => usage(a.quotas.workers) },
  { header: 'pods', value: (a) => usage(a.quotas.pods) },
  { header: 'volume GB', value: (a) => usage(a.quotas.networkVolumeGb) },
  { header: '$/hour', value: (a) => usage(a.quotas.spendPerHour) },
  { header: '$/month', value: (a) => usage(a.quotas.spendPerMonth) },
  { header: 'guaranteed', value: (a) => a.fairShare.guaranteedGpus ?? '-' },
  { header: 'weight', value: (a) => a.fairShare.weight },
]

function usage(u: { use: number; limit: number | null }): string {
  return `${u.use}/${u.limit ?? '-'}`
}

/** The quotas of one account as lines: a table of use against limits, then the rest. */
function describe(q: AccountQuotas): string {
  const rows = Object.entries(q.quotas).map(([quota, u]) => ({ quota, ...u }))
  return [
    `account: ${q.accountName} (${q.accountId})`,
    renderTable(rows, rowColumns),
    `at spend limit: ${q.atSpendLimit}${q.spendLimitReached ? ` (reached: ${q.spendLimitReached})` : ''}`,
    `fair share: ${q.fairShare.guaranteedGpus ?? 0} GPUs guaranteed, weight ${q.fairShare.weight}, ${q.fairShare.borrowedGpus} borrowed`,
  ].join('\n')
}

/** A limit option: a non-negative number, or `none` for no limit (kept as 'none': commander turns a null into ''). */
function limitOption(integer: boolean) {
  return (v: string): number | 'none' => {
    if (v === 'none') return 'none'
    const n = Number(v)
    if (v.trim() === '' || !Number.isFinite(n) || n < 0 || (integer && !Number.isInteger(n)))
      throw new InvalidArgumentError(`expected ${integer ? 'a whole number' : 'a number'} >= 0, or "none".`)
    return n
  }
}

type Limit = number | 'none'

interface SetFlags extends ClientOptions {
  gpus?: Limit
  workers?: Limit
  pods?: Limit
  networkVolumeGb?: Limit
  spendPerHour?: Limit
  spendPerMonth?: Limit
  atSpendLimit?: 'FINISH' | 'STOP'
  guaranteedGpus?: Limit
  weight?: Limit
}

/** The value to send: the one given ('none': no limit), else the current one. */
function given(v: Limit | undefined, current: number | null): number | null {
  return v === undefined ? current : v === 'none' ? null : v
}

/** `hangar quotas`: quotas, spend limits and fair share per account (docs/quotas.md). */
export function registerQuotas(program: Command): void {
  const group = program
    .command('quotas')
    .description('quotas, spend limits and fair share per account (set, get, list, remove: admin key)')
  clientCommand(group, 'show', "the calling account's use against its quotas").action(async (opts: ClientOptions) => {
    const q = await clientFor(opts).myQuotas()
    print(opts, q, () => describe(q))
  })
  clientCommand(group, 'list', "every account's use against its quotas").action(async (opts: ClientOptions) => {
    const all = await clientFor(opts).listQuotas()
    print(opts, all, { rows: all, columns: listColumns })
  })
  clientCommand(group, 'get <account>', "an account's quotas (id or name)").action(
    async (account: string, opts: ClientOptions) => {
      const q = await clientFor(opts).getQuotas(account)
      print(opts, q, () => describe(q))
    },
  )
  clientCommand(group, 'set <account>', 'change quotas of an account; the ones not given are kept ("none": no limit)')
    .option('--gpus <n>', 'GPUs held at once by its workers and pods', limitOption(true))
    .option('--workers <n>', 'workers.max summed over its endpoints', limitOption(true))
    .option('--pods <n>', 'pods that are not terminated', limitOption(true))
    .option('--network-volume-gb <n>', 'GB of network volumes', limitOption(true))
    .option('--spend-per-hour <usd>', 'USD per UTC hour', limitOption(false))
    .option('--spend-per-month <usd>', 'USD per UTC month', limitOption(false))
    .option('--at-spend-limit <mode>', 'FINISH (running work finishes) or STOP (it is stopped)', (v: string) => {
      if (v !== 'FINISH' && v !== 'STOP') throw new InvalidArgumentError('expected FINISH or STOP.')
      return v
    })
    .option('--guaranteed-gpus <n>', 'fair share: GPUs never taken back from it', limitOption(true))
    .option('--weight <n>', 'fair share: orders who gets scarce GPUs (1 or more)', limitOption(true))
    .action(async (account: string, opts: SetFlags) => {
      const client = clientFor(opts)
      const now = await client.getQuotas(account)
      const limit = (name: keyof AccountQuotas['quotas'], v: Limit | undefined) => given(v, now.quotas[name].limit)
      const body: SetQuotas = {
        gpus: limit('gpus', opts.gpus),
        workers: limit('workers', opts.workers),
        pods: limit('pods', opts.pods),
        networkVolumeGb: limit('networkVolumeGb', opts.networkVolumeGb),
        spendPerHour: limit('spendPerHour', opts.spendPerHour),
        spendPerMonth: limit('spendPerMonth', opts.spendPerMonth),
        atSpendLimit: opts.atSpendLimit ?? now.atSpendLimit,
        guaranteedGpus: given(opts.guaranteedGpus, now.fairShare.guaranteedGpus),
        weight: given(opts.weight, now.fairShare.weight) ?? 1,
      }
      const q = await client.setQuotas(account, body)
      print(opts, q, () => describe(q))
    })
  clientCommand(group, 'remove <account>', "remove an account's quotas (no limits, weight 1)").action(
    async (account: string, opts: ClientOptions) => {
      await clientFor(opts).removeQuotas(account)
      print(opts, { removed: account })
    },
  )
}
