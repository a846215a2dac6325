import { Type, type Static } from 'typebox'
import { Closed, DateTime, Id } from './common.js'

const Limit = (description: string) =>
  Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: 1_000_000 }), Type.Null()], { description }))
const UsdLimit = (description: string) =>
  Type.Optional(Type.Union([Type.Number({ minimum: 0, maximum: 1_000_000_000 }), Type.Null()], { description }))

/** An account's quotas as the admin sets them: the whole set (a quota left out or null has no limit). */
export const SetQuotas = Closed({
  gpus: Limit('GPUs its workers and pods may hold at once'),
  workers: Limit("the most workers.max summed over its endpoints (the hosted platform's worker quota)"),
  pods: Limit('pods that are not terminated'),
  networkVolumeGb: Limit('GB of network volumes, summed'),
  spendPerHour: UsdLimit('USD per UTC hour, from the billing ledger'),
  spendPerMonth: UsdLimit('USD per UTC calendar month, from the billing ledger'),
  atSpendLimit: Type.Optional(
    Type.Enum(['FINISH', 'STOP'], {
      default: 'FINISH',
      description:
        'at a spend limit nothing new starts; FINISH: running workers finish their jobs and stop, pods keep running; STOP: workers and pods are stopped',
    }),
  ),
  guaranteedGpus: Limit(
    'fair share: GPUs never taken back from the account; those it holds beyond are borrowed and given back first',
  ),
  weight: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 1000, default: 1, description: 'fair share: orders who gets scarce GPUs' }),
  ),
})
export type SetQuotas = Static<typeof SetQuotas>

const Usage = (unit: string) =>
  Type.Object({
    use: Type.Number({ description: `in use now, ${unit}` }),
    limit: Type.Union([Type.Number(), Type.Null()], { description: `${unit}; null: no limit` }),
  })

/** Use against limits, for the account itself (`GET /v2/account/quotas`) and the admin. */
export const AccountQuotas = Type.Object({
  accountId: Id,
  accountName: Type.String(),
  quotas: Type.Object({
    gpus: Usage('GPUs'),
    workers: Usage('workers.max summed over endpoints'),
    pods: Usage('pods'),
    networkVolumeGb: Usage('GB'),
    spendPerHour: Usage('USD this UTC hour'),
    spendPerMonth: Usage('USD this UTC month'),
  }),
  atSpendLimit: Type.Enum(['FINISH', 'STOP']),
  /** The spend limit reached, if one is: nothing new starts. */
  spendLimitReached: Type.Union([Type.Enum(['spendPerHour', 'spendPerMonth']), Type.Null()]),
  fairShare: Type.Object({
    guaranteedGpus: Type.Union([Type.Integer(), Type.Null()]),
    weight: Type.Integer(),
    borrowedGpus: Type.Integer({
      description: 'GPUs held beyond the guarantee: given back first when capacity is short',
    }),
  }),
  updatedAt: Type.Union([DateTime, Type.Null()], { description: 'when the admin last set them; null: never' }),
})
export type AccountQuotas = Static<typeof AccountQuotas>

export const AccountQuotasList = Type.Object({ accounts: Type.Array(AccountQuotas) })
export type AccountQuotasList = Static<typeof AccountQuotasList>
