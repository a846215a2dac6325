import type { Clock } from '../../src/domain/clock.js'

/** A clock tests move by hand, starting at the real time. */
export class ManualClock implements Clock {
  private t = Date.now()
  now(): number {
    return this.t
  }
  /** Moves to an absolute time, e.g. the start of a minute so rate windows don't roll over mid-test. */
  set(ms: number): void {
    this.t = ms
  }
  advance(ms: number): void {
    this.t += ms
  }
}
