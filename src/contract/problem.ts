import { Type, type Static } from 'typebox'

/** RFC 9457 problem details, the body of every management API error. */
export const Problem = Type.Object(
  {
    title: Type.String({ description: 'short summary, the HTTP reason phrase' }),
    status: Type.Integer({ description: 'HTTP status code' }),
    detail: Type.String({ description: 'explanation specific to this occurrence' }),
    errors: Type.Optional(Type.Array(Type.String(), { description: 'individual validation failures, one per entry' })),
    requestId: Type.Optional(Type.String({ description: 'request id, to find the request in the server log' })),
    quota: Type.Optional(
      Type.Object(
        {
          name: Type.String({ description: 'gpus, workers, pods, networkVolumeGb, spendPerHour or spendPerMonth' }),
          use: Type.Number({ description: 'in use now (USD for spend)' }),
          requested: Type.Number({ description: 'what the request adds (0 for a spend limit)' }),
          limit: Type.Number({ description: 'the limit (USD for spend)' }),
        },
        { description: 'the quota a refused request would pass (see docs/quotas.md)' },
      ),
    ),
  },
  { $id: 'Problem' },
)
export type Problem = Static<typeof Problem>
