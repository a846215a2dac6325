import { describe, expect, it } from 'vitest'
import { backoffDelay, CrashBackoff } from './CrashBackoff.js'

describe('backoffDelay', () => {
  it.each([
    [0, 0],
    [1, 1_000],
    [2, 2_000],
    [3, 4_000],
    [6, 32_000],
    [7, 60_000],
    [1_000, 60_000],
  ])('after %i consecutive failures waits %i ms (base 1 s, cap 60 s)', (consecutive, ms) => {
    expect(backoffDelay(consecutive, 1_000, 60_000)).toBe(ms)
  })
})

describe('CrashBackoff', () => {
  function setup() {
    let now = 10_000
    const backoff = new CrashBackoff({ baseMs: 1_000, maxMs: 8_000, now: () => now })
    return { backoff, advance: (ms: number) => void (now += ms) }
  }

  it('holds an endpoint back for the delay its consecutive failures earned, counted from the last one', () => {
    const { backoff, advance } = setup()
    expect(backoff.remainingMs('e')).toBe(0)
    expect(backoff.failed('e', 'exit 1')).toBe(1_000)
    advance(400)
    expect(backoff.remainingMs('e')).toBe(600)
    expect(backoff.failed('e', 'exit 2')).toBe(2_000)
    expect(backoff.remainingMs('e')).toBe(2_000)
    advance(2_000)
    expect(backoff.remainingMs('e')).toBe(0)
    expect(backoff.consecutive('e')).toBe(2)
    expect(backoff.lastReason('e')).toBe('exit 2')
  })

  it('caps the delay and keeps endpoints apart', () => {
    const { backoff } = setup()
    for (let i = 0; i < 10; i++) backoff.failed('e', `crash ${i}`)
    expect(backoff.remainingMs('e')).toBe(8_000)
    expect(backoff.remainingMs('other')).toBe(0)
    expect(backoff.consecutive('other')).toBe(0)
    expect(backoff.lastReason('other')).toBeNull()
  })

  it('starts over once a worker of the endpoint is healthy', () => {
    const { backoff } = setup()
    backoff.failed('e', 'exit 1')
    backoff.failed('e', 'exit 1')
    backoff.healthy('e')
    expect(backoff.remainingMs('e')).toBe(0)
    expect(backoff.consecutive('e')).toBe(0)
    expect(backoff.failed('e', 'exit 1')).toBe(1_000)
  })
})
