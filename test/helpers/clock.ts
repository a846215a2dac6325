import type { Clock } from '../../src/domain/clock.js'

/** A clock tests move by hand, starting at the real time. */
export class ManualClock implements Clock {
  private t = Date.now()
  now(): number {
    return this.t
  }
  advance(ms: number): void {
    this.t += ms
  }
}
