import { Type, type Static } from 'typebox'

/** Query of the log streams (GET /v2/pods/{id}/logs and worker logs), api-facts §2.5. */
export const LogQuery = Type.Object({
  source: Type.Optional(Type.Enum(['container', 'system'])),
  tail: Type.Optional(
    Type.Integer({ minimum: 0, maximum: 5000, description: 'history lines to send first; default 100, 0 = live only' }),
  ),
  since: Type.Optional(Type.String({ format: 'date-time' })),
})
export type LogQuery = Static<typeof LogQuery>
