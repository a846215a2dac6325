import { Type, type Static } from 'typebox'
import { Closed, DateTime, Id } from './common.js'

/** A secret's name: what env values reference as `{{ RUNPOD_SECRET_<name> }}`. */
export const SecretName = Type.String({
  pattern: '^[A-Za-z0-9_-]{1,64}$',
  description: 'letters, digits, _ and -, at most 64; unique in the account and never changed',
})

const SecretValue = Type.String({
  minLength: 1,
  maxLength: 32_768,
  description: 'write-only: sealed at rest, never returned',
})
const Description = Type.String({ maxLength: 500 })

/** A secret as the API shows it: metadata only, never the value. */
export const Secret = Type.Object({
  id: Id,
  name: Type.String(),
  description: Type.String(),
  /** 1 at creation, one more at each rotation of the value. */
  version: Type.Integer({ minimum: 1, description: '1 at creation, one more each time the value is rotated' }),
  createdAt: DateTime,
  updatedAt: DateTime,
})
export type Secret = Static<typeof Secret>

export const CreateSecret = Closed({ name: SecretName, value: SecretValue, description: Type.Optional(Description) })
export type CreateSecret = Static<typeof CreateSecret>

/** A new value (a rotation: used from the next start of each workload), a new description, or both. */
export const UpdateSecret = Closed(
  { value: Type.Optional(SecretValue), description: Type.Optional(Description) },
  { minProperties: 1 },
)
export type UpdateSecret = Static<typeof UpdateSecret>

export const SecretList = Type.Object({ secrets: Type.Array(Secret) })
export type SecretList = Static<typeof SecretList>
