/**
 * Freezes a parsed document and everything in it: stores that keep documents parsed hand every caller the same
 * object, so none may change it.
 */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v)
    Object.freeze(value)
  }
  return value
}
