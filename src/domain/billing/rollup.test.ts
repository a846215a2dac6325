import { describe, expect, it } from 'vitest'
import { HOUR_MS, MONTH_MS } from './money.js'
import { grainOf, grainSpans, rollupRows } from './rollup.js'
import { costBetween, type UsageInterval } from './usage.js'

const t = (s: string) => Date.parse(s)
const iso = (ms: number) => new Date(ms).toISOString()

const interval = (
  over: Partial<UsageInterval> & { startedAt: number; endedAt: number },
): UsageInterval & { endedAt: number } => ({
  id: 1,
  accountId: 'acc',
  product: 'pod',
  component: 'gpu',
  resourceId: 'p1',
  partId: 'compute',
  gpuTypeId: 'NVIDIA L4',
  quantity: 1,
  priceMicros: 1_116_001,
  periodMs: HOUR_MS,
  ...over,
})

describe('billing roll-ups', () => {
  it('sums weeks from days and years from months', () => {
    expect(['hour', 'day', 'week', 'month', 'year'].map((s) => grainOf(s as Parameters<typeof grainOf>[0]))).toEqual([
      'hour',
      'day',
      'day',
      'month',
      'month',
    ])
  })

  it('splits a closed interval at every grain, each grain adding up to its cost, per resource and per GPU type', () => {
    // 2026-01-31 23:10 to 2026-02-01 02:20:00.5: four hours, two days, two months.
    const a = interval({ startedAt: t('2026-01-31T23:10:00Z'), endedAt: t('2026-02-01T02:20:00.500Z') })
    const b = interval({
      id: 2,
      resourceId: 'p2',
      component: 'disk',
      priceMicros: 5_000_001,
      periodMs: MONTH_MS,
      startedAt: t('2026-02-01T00:00:00Z'),
      endedAt: t('2026-02-01T01:00:00Z'),
    })
    const rows = rollupRows([a, b])
    const sum = (grain: string, resourceId: string | null) =>
      rows.filter((r) => r.grain === grain && r.resourceId === resourceId)
    for (const grain of ['hour', 'day', 'month']) {
      expect(
        sum(grain, 'p1').reduce((s, r) => s + r.amounts.gpu, 0),
        grain,
      ).toBe(costBetween(a, a.startedAt, a.endedAt))
      expect(
        sum(grain, 'p2').reduce((s, r) => s + r.amounts.disk, 0),
        grain,
      ).toBe(costBetween(b, b.startedAt, b.endedAt))
      // The GPU type's row of each bucket is its resources' rows together.
      for (const r of sum(grain, null)) {
        const parts = rows.filter((x) => x.grain === grain && x.bucket === r.bucket && x.resourceId !== null)
        expect(r.amounts.gpu + r.amounts.disk).toBe(parts.reduce((s, x) => s + x.amounts.gpu + x.amounts.disk, 0))
      }
    }
    expect(sum('hour', 'p1').map((r) => iso(r.bucket))).toEqual([
      '2026-01-31T23:00:00.000Z',
      '2026-02-01T00:00:00.000Z',
      '2026-02-01T01:00:00.000Z',
      '2026-02-01T02:00:00.000Z',
    ])
    expect(sum('day', null).map((r) => [iso(r.bucket), r.gpuTypeId, r.amounts.gpu > 0, r.amounts.disk > 0])).toEqual([
      ['2026-01-31T00:00:00.000Z', 'NVIDIA L4', true, false],
      ['2026-02-01T00:00:00.000Z', 'NVIDIA L4', true, true],
    ])
    expect(sum('month', 'p2').map((r) => iso(r.bucket))).toEqual(['2026-02-01T00:00:00.000Z'])
  })

  it('keeps a row for use that cost nothing, and none for an empty interval', () => {
    const free = rollupRows([
      interval({
        priceMicros: 0,
        gpuTypeId: null,
        startedAt: t('2026-03-14T10:00:00Z'),
        endedAt: t('2026-03-14T10:30:00Z'),
      }),
    ])
    expect(free.map((r) => [r.grain, r.resourceId, r.gpuTypeId, r.amounts.gpu])).toEqual([
      ['hour', 'p1', '', 0],
      ['hour', null, '', 0],
      ['day', 'p1', '', 0],
      ['day', null, '', 0],
      ['month', 'p1', '', 0],
      ['month', null, '', 0],
    ])
    expect(
      rollupRows([interval({ startedAt: t('2026-03-14T10:00:00Z'), endedAt: t('2026-03-14T10:00:00Z') })]),
    ).toEqual([])
  })

  it.each([
    [
      'a year from an hour in March',
      '2025-03-14T15:00:00Z',
      '2026-03-14T16:00:00Z',
      [
        'hour 2025-03-14T15 .. 2025-03-15T00',
        'day 2025-03-15T00 .. 2025-04-01T00',
        'month 2025-04-01T00 .. 2026-03-01T00',
        'day 2026-03-01T00 .. 2026-03-14T00',
        'hour 2026-03-14T00 .. 2026-03-14T16',
      ],
    ],
    ['whole days in one month', '2026-03-02T00:00:00Z', '2026-03-05T00:00:00Z', ['day 2026-03-02T00 .. 2026-03-05T00']],
    [
      'hours across one midnight',
      '2026-03-02T20:00:00Z',
      '2026-03-03T04:00:00Z',
      ['hour 2026-03-02T20 .. 2026-03-03T04'],
    ],
    ['whole months', '2026-01-01T00:00:00Z', '2026-03-01T00:00:00Z', ['month 2026-01-01T00 .. 2026-03-01T00']],
    ['nothing', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z', []],
  ])('covers %s with the fewest roll-up buckets', (_, from, to, spans) => {
    expect(
      grainSpans(t(from), t(to)).map((s) => `${s.grain} ${iso(s.from).slice(0, 13)} .. ${iso(s.to).slice(0, 13)}`),
    ).toEqual(spans)
  })
})
