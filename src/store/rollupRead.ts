import { grainOf } from '../domain/billing/rollup.js'
import { USAGE_COMPONENTS, type UsageComponent } from '../domain/billing/usage.js'
import type { RollupFilter, RollupGrouping } from './UsageStore.js'

/** The amount column of each component in the roll-up tables (both adapters, migration 150). */
export const AMOUNT_COLUMN: Record<UsageComponent, string> = {
  gpu: 'gpu',
  cpu: 'cpu',
  disk: 'disk',
  fee: 'fee',
  standard: 'standard',
  highPerformance: 'high_performance',
  networking: 'networking',
}
export const AMOUNT_COLUMNS = USAGE_COMPONENTS.map((c) => AMOUNT_COLUMN[c])

const GROUP_COLUMN = { accountId: 'account_id', resourceId: 'resource_id', gpuTypeId: 'gpu_type_id' } as const

/**
 * How a roll-up sum reads, the same in both adapters: the table (sums neither by resource nor of one read the
 * smaller per-GPU-type table), the key columns it returns (product, then those grouped by), and whether its rows
 * are the groups already (the grain is the bucket size, and the account and GPU type are grouped by or fixed),
 * to be read as they are rather than through GROUP BY.
 */
export function rollupRead(
  filter: RollupFilter,
  g: RollupGrouping,
): { table: 'usage_rollup' | 'usage_rollup_gpu'; keys: string; distinct: boolean } {
  const fixed = (c: 'accountId' | 'resourceId' | 'gpuTypeId') => g.by.includes(c) || filter[c] !== undefined
  return {
    table: fixed('resourceId') ? 'usage_rollup' : 'usage_rollup_gpu',
    keys: ['product', ...g.by.map((c) => GROUP_COLUMN[c])].join(', '),
    distinct: grainOf(g.size) === g.size && fixed('accountId') && fixed('gpuTypeId'),
  }
}
