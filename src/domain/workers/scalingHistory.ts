import type { DemandSample } from './planScaling.js'

/** The burst path compares waiting jobs now with the lowest count of this window. */
export const BURST_WINDOW_MS = 2_000

/**
 * How much waiting jobs rose within `windowMs`: now minus the lowest count in effect during the window.
 * Before the first sample the endpoint had nothing waiting (it was not active).
 */
export function burstJump(history: DemandSample[], queuedNow: number, windowMs = BURST_WINDOW_MS): number {
  return queuedNow - Math.min(...inEffect(history, windowMs).map((s) => s.queued))
}

/** The highest desired worker count in effect during the last `windowMs` (0 before the first sample). */
export function peakDesired(history: DemandSample[], windowMs: number): number {
  return Math.max(...inEffect(history, windowMs).map((s) => s.desired))
}

/**
 * The samples in effect at some point of the last `windowMs`: those taken within it, and the one in
 * effect when it began (the newest older sample, or "nothing" when there is none). Samples taken at the
 * same time (a monotonic clock may read the same twice) are in effect in their order, newest last.
 */
function inEffect(history: DemandSample[], windowMs: number): DemandSample[] {
  const within = history.filter((s) => s.agoMs <= windowMs)
  let before: DemandSample = { agoMs: Infinity, queued: 0, desired: 0 }
  for (const s of history) if (s.agoMs > windowMs && s.agoMs <= before.agoMs) before = s
  return [before, ...within]
}

/** A sample with its absolute time, as the scaler keeps them. */
export interface TimedSample {
  at: number
  queued: number
  desired: number
}

/**
 * Adds a decision to an endpoint's history, keeping change points only, and drops samples no window
 * longer than `keepMs` can reach (the newest of those is kept: it is still in effect at the window start).
 */
export function recordSample(history: TimedSample[], sample: TimedSample, keepMs: number): TimedSample[] {
  const last = history[history.length - 1]
  const next = last && last.queued === sample.queued && last.desired === sample.desired ? history : [...history, sample]
  let cut = -1
  for (let i = next.length - 1; i >= 0 && cut < 0; i--) if (next[i].at < sample.at - keepMs) cut = i
  return cut > 0 ? next.slice(cut) : next
}

/** Timed samples as the policy reads them, relative to `now`. */
export function relativeHistory(history: TimedSample[], now: number): DemandSample[] {
  return history.map((s) => ({ agoMs: now - s.at, queued: s.queued, desired: s.desired }))
}
