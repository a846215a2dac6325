/** Source of time, injected so tests of TTLs and timeouts can move it instead of sleeping. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number
}

export const systemClock: Clock = { now: () => Date.now() }

/** RFC 3339 UTC timestamp of a clock reading. */
export function iso(ms: number): string {
  return new Date(ms).toISOString()
}
