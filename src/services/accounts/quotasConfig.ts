import { Type, type Static } from 'typebox'

export const QuotasConfig = Type.Object(
  {
    checkIntervalMs: Type.Integer({
      minimum: 50,
      default: 5_000,
      description:
        "How often the leader sums each limited account's spend from the billing ledger (and re-reads quotas set on other replicas); a spend limit is acted on at most this late.",
    }),
  },
  {
    additionalProperties: false,
    default: {},
    description:
      'Quotas and spend limits per account, set by the admin (PUT /v2/admin/accounts/{id}/quotas; see docs/quotas.md).',
  },
)
export type QuotasConfig = Static<typeof QuotasConfig>
