import { Type, type Static } from 'typebox'
import { DateTime } from './common.js'

/** Who made a change: an API key today, a console member or the control plane itself where those act. */
export const AuditActor = Type.Object({
  type: Type.Union([Type.Literal('key'), Type.Literal('member'), Type.Literal('system')]),
  id: Type.String({ description: "the key's (member's) id" }),
  accountId: Type.String({ description: 'the account it acted for' }),
})
export type AuditActor = Static<typeof AuditActor>

/** One change made through the API, as the audit log keeps it. Bodies are never recorded. */
export const AuditEntry = Type.Object({
  id: Type.String({ description: 'increasing: later entries have larger ids' }),
  at: DateTime,
  actor: AuditActor,
  action: Type.String({ description: '`<resource>.<verb>`, e.g. `endpoint.create`, `key.revoke`, `secret.update`' }),
  resourceType: Type.String(),
  resourceId: Type.Union([Type.String(), Type.Null()]),
  outcome: Type.Union([Type.Literal('success'), Type.Literal('refused'), Type.Literal('failed')], {
    description: 'success (2xx/3xx), refused (4xx: the change was not made), failed (5xx)',
  }),
  status: Type.Integer({ description: 'the HTTP status answered' }),
  ip: Type.Union([Type.String(), Type.Null()], { description: "the client's address" }),
  requestId: Type.Union([Type.String(), Type.Null()], { description: 'the request id of the request log' }),
})
export type AuditEntry = Static<typeof AuditEntry>

export const AuditPage = Type.Object({
  entries: Type.Array(AuditEntry, { description: 'newest first' }),
  nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'pass as `cursor` for older entries' }),
})
export type AuditPage = Static<typeof AuditPage>

export const AuditQuery = Type.Object(
  {
    actor: Type.Optional(Type.String({ minLength: 1, description: "a key's (member's) id" })),
    action: Type.Optional(
      Type.String({ minLength: 1, description: 'an action (`pod.create`), or a prefix ending in `.` (`pod.`)' }),
    ),
    resourceType: Type.Optional(Type.String({ minLength: 1 })),
    resourceId: Type.Optional(Type.String({ minLength: 1 })),
    account: Type.Optional(
      Type.String({
        minLength: 1,
        description: "admin only: one account's entries (id or name); others see only their own",
      }),
    ),
    since: Type.Optional(Type.String({ format: 'date-time', description: 'entries at or after' })),
    until: Type.Optional(Type.String({ format: 'date-time', description: 'entries before' })),
    cursor: Type.Optional(Type.String({ pattern: '^[0-9]{1,18}$', description: "a page's nextCursor" })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
    format: Type.Optional(
      Type.Union([Type.Literal('json'), Type.Literal('jsonl')], {
        description:
          '`jsonl`: every matching entry (from `cursor` on, `limit` ignored) as JSON lines (application/x-ndjson), as `Accept: application/x-ndjson` asks too',
      }),
    ),
  },
  { additionalProperties: false },
)
export type AuditQuery = Static<typeof AuditQuery>
