import { describe, expect, it } from 'vitest'
import { burstJump, peakDesired, recordSample, relativeHistory, type TimedSample } from './scalingHistory.js'

describe('scaling history', () => {
  it('keeps change points only', () => {
    let hist: TimedSample[] = []
    for (const [at, queued, desired] of [
      [0, 1, 1],
      [100, 1, 1],
      [200, 2, 1],
      [300, 2, 1],
    ])
      hist = recordSample(hist, { at, queued, desired }, 10_000)
    expect(hist.map((s) => s.at)).toEqual([0, 200])
  })

  it('drops samples no window can reach, keeping the one still in effect', () => {
    let hist: TimedSample[] = []
    for (const [at, queued] of [
      [0, 1],
      [1_000, 2],
      [2_000, 3],
      [9_000, 4],
    ])
      hist = recordSample(hist, { at, queued, desired: 0 }, 5_000)
    expect(hist.map((s) => s.at)).toEqual([2_000, 9_000])
  })

  it('peakDesired sees the level in effect when the window began, and 0 before any sample', () => {
    const hist = relativeHistory(
      [
        { at: 0, queued: 0, desired: 3 },
        { at: 4_000, queued: 0, desired: 1 },
      ],
      10_000,
    )
    expect(peakDesired(hist, 5_000)).toBe(1)
    expect(peakDesired(hist, 7_000)).toBe(3)
    expect(peakDesired([], 5_000)).toBe(0)
  })

  it('of samples taken at the same time, the newest is the one in effect', () => {
    // Busy (3), then idle (0) within one clock reading; a window later, only the idle level holds.
    const hist = relativeHistory(
      [
        { at: 1_000, queued: 5, desired: 3 },
        { at: 1_000, queued: 0, desired: 0 },
      ],
      2_100,
    )
    expect(peakDesired(hist, 1_000)).toBe(0)
    expect(peakDesired(hist, 2_000)).toBe(3)
  })

  it('burstJump compares with the lowest count of the window', () => {
    const hist = relativeHistory(
      [
        { at: 0, queued: 10, desired: 1 },
        { at: 9_000, queued: 2, desired: 1 },
        { at: 9_500, queued: 4, desired: 1 },
      ],
      10_000,
    )
    expect(burstJump(hist, 9)).toBe(7)
    expect(burstJump([], 5)).toBe(5)
  })
})
