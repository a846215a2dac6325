import { Type, type Static } from 'typebox'

export const AuditConfig = Type.Object(
  {
    retentionDays: Type.Integer({
      minimum: 0,
      default: 400,
      description:
        'Days an audit log entry is kept; older ones are deleted hourly. 0 keeps every entry. The default covers a year and a bit, for yearly reviews.',
    }),
  },
  {
    additionalProperties: false,
    default: {},
    description: 'The audit log of changes made through the API (`GET /v2/audit`; see docs/secrets-and-audit.md).',
  },
)
export type AuditConfig = Static<typeof AuditConfig>
