import { describe, expect, it } from 'vitest'
import { newLiveWorker } from './LiveWorker.js'
import { LiveWorkers } from './LiveWorkers.js'

describe('LiveWorkers', () => {
  it('keeps the per-endpoint index in step with set, delete and clear', () => {
    const live = new LiveWorkers()
    const a1 = newLiveWorker('a1', 'A', 'acc', 0)
    const a2 = newLiveWorker('a2', 'A', 'acc', 0)
    const b1 = newLiveWorker('b1', 'B', 'acc', 0)
    live.set(a1.id, a1).set(a2.id, a2).set(b1.id, b1)
    expect(live.ofEndpoint('A')).toEqual([a1, a2])
    expect(live.endpointIds()).toEqual(['A', 'B'])
    const again = newLiveWorker('a1', 'A', 'acc', 0)
    live.set(again.id, again) // the same id again (a worker taken back) replaces, not adds
    expect(live.ofEndpoint('A')).toEqual([again, a2])
    expect(live.delete('b1')).toBe(true)
    expect(live.delete('b1')).toBe(false)
    expect(live.ofEndpoint('B')).toEqual([])
    expect(live.endpointIds()).toEqual(['A'])
    live.clear()
    expect(live.ofEndpoint('A')).toEqual([])
    expect(live.size).toBe(0)
  })
})
