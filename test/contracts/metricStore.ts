import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { silentLog } from '../../src/services/log.js'
import { EndpointMetricsRecorder } from '../../src/services/endpoints/EndpointMetricsRecorder.js'
import type { Store } from '../../src/store/Store.js'
import { ManualClock } from '../helpers/clock.js'

const MIN = 60_000
const T0 = Date.parse('2026-03-02T10:00:00.000Z')

/** Endpoint metric buckets of the store contract; each case uses endpoint ids of its own on the shared store. */
export function metricCases(store: () => Store): void {
  describe('endpoint metric buckets', () => {
    const ep = () => `ep_${randomUUID().slice(0, 8)}`

    it('replaces a replica its own row, keeps the rows of other replicas, and reads a range of one resolution', async () => {
      const s = store()
      const a = ep()
      await s.metrics.put([
        { endpointId: a, resolution: 'minute', bucket: T0, replica: 'r1', data: { c: { completed: 1 } } },
      ])
      await s.metrics.put([
        { endpointId: a, resolution: 'minute', bucket: T0, replica: 'r1', data: { c: { completed: 3 } } },
        { endpointId: a, resolution: 'minute', bucket: T0, replica: 'r2', data: { c: { failed: 2 } } },
        { endpointId: a, resolution: 'minute', bucket: T0 + MIN, replica: 'r1', data: { g: { queueDepth: [4, 2] } } },
        { endpointId: a, resolution: 'hour', bucket: T0, replica: 'r1', data: { c: { completed: 3 } } },
      ])
      const rows = await s.metrics.read([a], 'minute', T0, T0 + 2 * MIN)
      expect(rows.map((r) => [r.bucket - T0, r.replica, r.data]).sort()).toEqual([
        [0, 'r1', { c: { completed: 3 } }],
        [0, 'r2', { c: { failed: 2 } }],
        [MIN, 'r1', { g: { queueDepth: [4, 2] } }],
      ])
      expect(await s.metrics.read([a], 'minute', T0 + MIN, T0 + 2 * MIN)).toHaveLength(1)
      expect(await s.metrics.read([a], 'hour', T0, T0 + MIN)).toHaveLength(1)
      expect(await s.metrics.read([ep()], 'minute', T0, T0 + 2 * MIN)).toEqual([])
    })

    it('prunes rows older than a time, one resolution at a time', async () => {
      const s = store()
      const a = ep()
      const old = T0 - 400 * 86_400_000
      await s.metrics.put([
        { endpointId: a, resolution: 'minute', bucket: old, replica: 'r1', data: {} },
        { endpointId: a, resolution: 'hour', bucket: old, replica: 'r1', data: {} },
      ])
      expect(await s.metrics.prune('minute', old + 1)).toBeGreaterThanOrEqual(1)
      expect(await s.metrics.read([a], 'minute', old, old + 1)).toEqual([])
      expect(await s.metrics.read([a], 'hour', old, old + 1)).toHaveLength(1)
    })

    it('sums what two replicas counted, percentiles from merged bins, and survives a restart of the recorder', async () => {
      const s = store()
      const a = ep()
      const clock = new ManualClock()
      clock.set(T0 + 5_000)
      const replica = (name: string) =>
        new EndpointMetricsRecorder({
          store: s,
          clock,
          log: silentLog,
          gauges: async () => [],
          replica: `${name}-${randomUUID().slice(0, 6)}`,
        })
      const r1 = replica('r1')
      const r2 = replica('r2')
      for (let i = 0; i < 9; i++) r1.jobFinished(a, 'COMPLETED', 40, 2)
      r2.jobFinished(a, 'COMPLETED', 4_000, 3)
      r2.jobFinished(a, 'FAILED', 4_000, 3)
      r2.workerReady(a, 1_200)
      await r1.flush()
      await r2.flush()
      // A third process (a restart, another replica) reads what both wrote.
      const reader = replica('r3')
      const m = await reader.read(a, 'hour')
      const last = m.times.length - 1
      expect(m.times[last]).toBe(T0)
      expect(m.jobs.completed[last]).toBe(10)
      expect(m.jobs.failed[last]).toBe(1)
      expect(m.totals).toMatchObject({ completed: 10, failed: 1, coldStarts: 1 })
      // 9 of 11 ran 40 ms (bin 25-50 ms), 2 ran 4 s (bin 2.5-5 s).
      expect(m.executionMs.p50[last]).toBeGreaterThan(25)
      expect(m.executionMs.p50[last]).toBeLessThanOrEqual(50)
      expect(m.executionMs.p99[last]).toBeGreaterThan(2_500)
      expect(m.executionMs.p50[0]).toBeNull()
      // Two minutes later, in a day's window, the same jobs land in one 15-minute point; the hour rows hold them too.
      clock.advance(2 * MIN)
      expect((await reader.read(a, 'day')).totals.completed).toBe(10)
      expect((await reader.read(a, 'week')).totals.completed).toBe(10)
      expect(await reader.jobsLastHour([a, ep()])).toBe(11)
    })
  })
}
