import { describe, expect, it } from 'vitest'
import { BUCKET_SIZES, bucketEndAtOrAfter, bucketStart } from './buckets.js'
import { HOUR_MS, MONTH_MS } from './money.js'
import { buildRecords, type Contribution } from './records.js'
import { costBetween, intervalPieces, type UsageInterval } from './usage.js'
import { prng } from '../../../test/helpers/prng.js'

const YEAR0 = Date.parse('2025-11-20T07:13:00Z')

function randomIntervals(rand: () => number, n: number, now: number): UsageInterval[] {
  const int = (max: number) => Math.floor(rand() * max)
  return Array.from({ length: n }, (_, id) => {
    const startedAt = YEAR0 + int(100 * 24 * HOUR_MS)
    const long = rand() < 0.1
    const endedAt = rand() < 0.1 ? null : startedAt + int(long ? 40 * 24 * HOUR_MS : 30 * HOUR_MS)
    const storage = rand() < 0.3
    return {
      id,
      accountId: 'acc',
      product: storage ? 'volume' : 'pod',
      component: storage ? (rand() < 0.5 ? 'standard' : 'highPerformance') : (['gpu', 'cpu', 'disk'] as const)[int(3)],
      resourceId: `r${int(15)}`,
      partId: null,
      gpuTypeId: rand() < 0.5 ? 'NVIDIA L4' : null,
      quantity: 1 + int(8),
      priceMicros: 1 + int(storage ? 500_000_000 : 48_000_000),
      periodMs: storage ? MONTH_MS : HOUR_MS,
      startedAt: Math.min(startedAt, now),
      endedAt: endedAt === null ? null : Math.min(endedAt, now),
    }
  })
}

describe('billing records', () => {
  it('hourly, daily, weekly, monthly and yearly records and the aggregate all add up to the same total, to the micro-dollar', () => {
    const rand = prng(20261123)
    const now = YEAR0 + 110 * 24 * HOUR_MS
    const cost = (list: UsageInterval[], from: number, to: number) =>
      list.reduce((sum, i) => sum + costBetween(i, Math.max(from, i.startedAt), Math.min(to, i.endedAt ?? now)), 0)
    for (let round = 0; round < 3; round++) {
      const intervals = randomIntervals(rand, 60, now)
      // From before all usage, every size must find the same total.
      const allTime = cost(intervals, YEAR0, now)
      // And a range cut through the usage at random, snapped as the API snaps it for each size.
      const cutAt = YEAR0 + Math.floor(rand() * 60 * 24 * HOUR_MS)
      for (const size of BUCKET_SIZES) {
        for (const [from, to, whole] of [
          [bucketStart(YEAR0, size), bucketEndAtOrAfter(now, size), true],
          [bucketStart(cutAt, size), bucketEndAtOrAfter(now - Math.floor(rand() * 40 * 24 * HOUR_MS), size), false],
        ] as const) {
          const contributions: Contribution[] = intervals.flatMap((i) =>
            intervalPieces(i, from, to, size, now).map((p) => ({
              ...i,
              bucket: p.bucket,
              amounts: { [i.component]: p.amount },
            })),
          )
          for (const route of ['aggregate', 'pods', 'networkVolumes'] as const) {
            const built = buildRecords(route, route === 'pods' ? 'podId' : null, size, from, to, contributions)
            const products = route === 'pods' ? ['pod'] : route === 'networkVolumes' ? ['volume'] : ['pod', 'volume']
            const want = cost(
              intervals.filter((i) => products.includes(i.product)),
              from,
              to,
            )
            expect(built.totals.totalAmount, `${route} by ${size}, round ${round}`).toBe(want)
            if (route === 'aggregate' && whole) expect(built.totals.totalAmount).toBe(allTime)
            // Each record's total is the sum of its fields, and the records sum to the totals.
            let sum = 0
            for (const r of built.records) {
              const fields = Object.entries(r).filter(
                ([k, v]) => k.endsWith('Amount') && k !== 'totalAmount' && typeof v === 'number',
              )
              const micros = fields.reduce((s, [, v]) => s + Math.round((v as number) * 1e6), 0)
              expect(Math.round((r.totalAmount as number) * 1e6)).toBe(micros)
              sum += micros
            }
            expect(sum).toBe(want)
          }
        }
      }
    }
  })

  it('groups pods by GPU type by default and fills the GPU type of each pod when grouped by pod', () => {
    const day = Date.parse('2026-03-14T00:00:00Z')
    const c = (
      resourceId: string,
      gpuTypeId: string | null,
      component: 'gpu' | 'cpu' | 'disk',
      amount: number,
    ): Contribution => ({
      bucket: day,
      product: 'pod',
      resourceId,
      partId: null,
      gpuTypeId,
      amounts: { [component]: amount },
    })
    const input = [
      c('p1', 'NVIDIA L4', 'gpu', 1_000_000),
      c('p1', 'NVIDIA L4', 'disk', 5),
      c('p2', 'NVIDIA L4', 'gpu', 2_000_000),
      c('p3', null, 'cpu', 30),
    ]
    const end = day + 24 * HOUR_MS
    const byGpu = buildRecords('pods', 'gpuId', 'day', day, end, input)
    expect(byGpu.records).toEqual([
      {
        startTime: '2026-03-14T00:00:00.000Z',
        endTime: '2026-03-15T00:00:00.000Z',
        podId: null,
        gpuId: null,
        totalAmount: 0.00003,
        gpuAmount: 0,
        cpuAmount: 0.00003,
        diskAmount: 0,
      },
      {
        startTime: '2026-03-14T00:00:00.000Z',
        endTime: '2026-03-15T00:00:00.000Z',
        podId: null,
        gpuId: 'NVIDIA L4',
        totalAmount: 3.000005,
        gpuAmount: 3,
        cpuAmount: 0,
        diskAmount: 0.000005,
      },
    ])
    expect(byGpu.uniqueResources).toBe(3)
    const byPod = buildRecords('pods', 'podId', 'day', day, end, input)
    expect(byPod.records.map((r) => [r.podId, r.gpuId, r.totalAmount])).toEqual([
      ['p1', 'NVIDIA L4', 1.000005],
      ['p2', 'NVIDIA L4', 2],
      ['p3', null, 0.00003],
    ])
  })

  it('gives the aggregate a record for every bucket, used or not, and other routes only used ones', () => {
    const from = Date.parse('2026-03-14T00:00:00Z')
    const to = from + 3 * HOUR_MS
    const input: Contribution[] = [
      {
        bucket: from + HOUR_MS,
        product: 'volume',
        resourceId: 'v',
        partId: null,
        gpuTypeId: null,
        amounts: { standard: 7 },
      },
    ]
    expect(
      buildRecords('aggregate', null, 'hour', from, to, input).records.map((r) => r.storageStandardAmount),
    ).toEqual([0, 0.000007, 0])
    expect(buildRecords('networkVolumes', null, 'hour', from, to, input).records).toHaveLength(1)
    expect(buildRecords('endpoints', null, 'hour', from, to, input).records).toEqual([])
  })
})
