import { createHash } from 'node:crypto'

/**
 * Names that keep installations sharing one PostgreSQL database apart: each schema (`namespace`) has its
 * own leader lock and its own NOTIFY channel, so test runs on fresh schemas never see each other.
 */

/** First key of every Hangar advisory lock ('HANG'): other applications' locks on the database do not collide. */
export const LOCK_CLASS = 0x48414e47

/** The advisory lock a namespace's leader holds: `pg_try_advisory_lock(LOCK_CLASS, leaderLockKey(ns))`. */
export function leaderLockKey(namespace: string): number {
  return createHash('sha256').update(`hangar-leader:${namespace}`).digest().readInt32BE(0)
}

/** The LISTEN/NOTIFY channel of a namespace (a plain identifier, at most 63 bytes). */
export function feedChannel(namespace: string): string {
  return `hangar_feed_${createHash('sha256').update(namespace).digest('hex').slice(0, 16)}`
}
