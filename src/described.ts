import type { TSchema } from 'typebox'

/**
 * `schema` with a `description` of its own, leaving `schema` itself as it was: for a schema used in several
 * places that each mean something else by it (the configuration reference prints descriptions).
 */
export function described<T extends TSchema>(schema: T, description: string): T {
  return Object.defineProperties(
    {},
    {
      ...Object.getOwnPropertyDescriptors(schema),
      description: { value: description, enumerable: true, writable: true, configurable: true },
    },
  ) as T
}
