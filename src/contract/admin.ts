import { Type, type Static } from 'typebox'
import { Closed, DateTime, Id } from './common.js'

export const Permission = Type.Enum(['ALL', 'READ_ONLY', 'RESTRICTED'])
export type Permission = Static<typeof Permission>

export const Account = Type.Object({
  id: Id,
  name: Type.String(),
  rateLimitExempt: Type.Boolean(),
  createdAt: DateTime,
})
export type Account = Static<typeof Account>

export const CreateAccount = Closed({
  name: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' }),
  rateLimitExempt: Type.Optional(Type.Boolean({ default: false })),
})
export type CreateAccount = Static<typeof CreateAccount>

export const ApiKey = Type.Object({
  id: Id,
  accountId: Id,
  accountName: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  permission: Permission,
  endpointIds: Type.Array(Type.String(), { description: 'endpoints a RESTRICTED key may read and run jobs on' }),
  admin: Type.Boolean(),
  /** Enough to recognise the key: `hk_` and 4 random characters, or `…` and the last 4 of a chosen key; the key itself is never stored. */
  prefix: Type.String({
    description: '"hk_" and 4 random characters of a generated key, "…" and the last 4 of a chosen one',
  }),
  expiresAt: Type.Union([DateTime, Type.Null()]),
  revokedAt: Type.Union([DateTime, Type.Null()]),
  lastUsedAt: Type.Union([DateTime, Type.Null()]),
  createdAt: DateTime,
})
export type ApiKey = Static<typeof ApiKey>

/** The response of key creation: the only time the full key is shown. */
export const CreatedApiKey = Type.Intersect([ApiKey, Type.Object({ key: Type.String() })])
export type CreatedApiKey = Static<typeof CreatedApiKey>

export const CreateApiKey = Closed({
  account: Type.String({ minLength: 1, description: 'account id or name' }),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  permission: Permission,
  endpointIds: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { uniqueItems: true })),
  expiresAt: Type.Optional(DateTime),
})
export type CreateApiKey = Static<typeof CreateApiKey>

export const AccountList = Type.Object({ accounts: Type.Array(Account) })
export type AccountList = Static<typeof AccountList>
export const ApiKeyList = Type.Object({ keys: Type.Array(ApiKey) })
export type ApiKeyList = Static<typeof ApiKeyList>
export const ApiKeyQuery = Type.Object({ account: Type.Optional(Type.String({ minLength: 1 })) })
