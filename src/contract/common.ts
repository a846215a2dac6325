import { Type, type Static } from 'typebox'

/** Opaque resource identifier. */
export const Id = Type.String({ minLength: 1, maxLength: 128 })

/** RFC 3339 timestamp in UTC with a `Z` suffix. */
export const DateTime = Type.String({ format: 'date-time' })

/** `<major>.<minor>`, e.g. `12.4`. */
export const CudaVersion = Type.String({ pattern: '^\\d+\\.\\d+$' })

/** Path parameters `{id}`. */
export const IdParams = Type.Object({ id: Id })
export type IdParams = Static<typeof IdParams>

/** Closed object: unknown keys are rejected (every create/update body). */
export function Closed<T extends Parameters<typeof Type.Object>[0]>(
  properties: T,
  options: Parameters<typeof Type.Object>[1] = {},
) {
  return Type.Object(properties, { additionalProperties: false, ...options })
}

/** The (empty) body of a 204 answer to DELETE. */
export const Deleted = Type.Null({ description: 'deleted' })
