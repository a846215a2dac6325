import { HOUR_MS, MONTH_MS } from '../../src/domain/billing/money.js'
import type { UsageSubject } from '../../src/domain/billing/usage.js'
import { SqliteStore } from '../../src/store/sqlite/SqliteStore.js'
import { accountKey, percentile, round, startServer, type BenchContext, type Row } from '../lib.js'

const DAY = 24 * HOUR_MS
const GPUS = ['NVIDIA GeForce RTX 4090', 'NVIDIA L4', 'NVIDIA A40', 'NVIDIA H100 80GB HBM3']

/**
 * Workload 9: billing histories over a year of usage of 100 pods and 20 serverless endpoints (about a million
 * intervals in the full run), written straight into the ledger of a running server (the server's own SQLite
 * file, through the store adapter, so the roll-ups are built as closing intervals build them). Latency is
 * measured one request at a time (no queueing in the figure), after a warm-up.
 */
export async function billing(ctx: BenchContext): Promise<Row[]> {
  const scale = ctx.quick ? 0.05 : 1
  const s = await startServer()
  const w = '9 billing'
  try {
    const key = await accountKey(s, 'bench', true)
    const accountId = (
      (await s.api('GET', '/v2/admin/accounts')).body.accounts as Array<{ id: string; name: string }>
    ).find((a) => a.name === 'bench')!.id
    const now = Date.now()
    const t0 = performance.now()
    const intervals = await seed(s.dbFile, accountId, now, scale)
    const seedS = (performance.now() - t0) / 1000

    const year = new Date(now - 365 * DAY).toISOString()
    // [path, what, requests]: every history a user would ask of a year, each with the same goal; the per-pod
    // year is 36,500 records a response, measured fewer times.
    const queries: Array<[string, string, number?]> = [
      ['/v2/billing/pods?bucketSize=day', 'pods by day, last 30 days (default range)'],
      [`/v2/billing/pods?bucketSize=day&startTime=${year}`, 'pods by day, whole year'],
      [`/v2/billing/pods?bucketSize=day&grouping=podId&startTime=${year}`, 'pods by day and pod, whole year', 20],
      [`/v2/billing/pods?bucketSize=month&grouping=podId&startTime=${year}`, 'pods by month and pod, whole year'],
      [`/v2/billing/serverless?bucketSize=day&startTime=${year}`, 'serverless by day and endpoint, whole year'],
      [
        `/v2/billing/serverless?bucketSize=day&grouping=gpuTypeId&startTime=${year}`,
        'serverless by day and GPU type, whole year',
      ],
      [`/v2/billing/serverless?bucketSize=week&startTime=${year}`, 'serverless by week and endpoint, whole year'],
      [`/v2/billing?bucketSize=day&startTime=${year}`, 'aggregate by day, whole year'],
      ['/v2/billing?bucketSize=month&lastN=12', 'aggregate by month, last 12'],
      [`/v2/billing?bucketSize=hour&startTime=${year}`, 'aggregate by hour, whole year', 20],
      ['/v2/billing/serverless?bucketSize=hour&lastN=168', 'serverless by hour and endpoint, last 7 days'],
      ['/v2/billing/pods?bucketSize=hour&lastN=168', 'pods by hour, last 7 days'],
    ]
    const goal = '<= 200 ms p99'
    const rows: Row[] = [
      { workload: w, metric: 'ledger', value: intervals, unit: 'intervals', note: `seeded in ${round(seedS, 1)} s` },
    ]
    for (const [path, what, requests] of queries) {
      const n = Math.min(requests ?? 100, ctx.quick ? 20 : 100)
      const times: number[] = []
      let records = 0
      for (let i = 0; i < n + 5; i++) {
        const t = performance.now()
        const res = await fetch(s.url + path, { headers: { authorization: `Bearer ${key}` } })
        const body = (await res.json()) as { records?: unknown[] }
        if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(body)}`)
        if (i >= 5) times.push(performance.now() - t)
        records = body.records!.length
      }
      times.sort((a, b) => a - b)
      const p99 = round(percentile(times, 99), 1)
      rows.push({
        workload: w,
        metric: `${what} p99`,
        value: p99,
        unit: 'ms',
        goal,
        met: p99 <= 200,
        note: `p50 ${round(percentile(times, 50), 1)} ms, ${records} records`,
      })
    }
    return rows
  } finally {
    await s.stop()
  }
}

/** Writes a year of closed intervals ending before `now`; returns how many. */
async function seed(dbFile: string, accountId: string, now: number, scale: number): Promise<number> {
  const store = new SqliteStore(dbFile)
  const start = now - 365 * DAY
  let count = 0
  let batch: Array<UsageSubject & { startedAt: number; endedAt: number }> = []
  const flush = async () => {
    await store.usage.insertClosed(batch)
    count += batch.length
    batch = []
  }
  const add = async (i: UsageSubject & { startedAt: number; endedAt: number }) => {
    batch.push(i)
    if (batch.length >= 20_000) await flush()
  }
  const base = { accountId, quantity: 1, partId: null }
  try {
    // Pods: 20 sessions of about an hour a day each, GPU compute; a container disk for each 30 days.
    const sessions = Math.max(1, Math.round(20 * scale))
    for (let p = 0; p < 100; p++) {
      const gpuTypeId = GPUS[p % GPUS.length]
      const pod = { ...base, product: 'pod' as const, resourceId: `pod${p}`, gpuTypeId }
      for (let day = start; day + DAY <= now; day += DAY) {
        for (let k = 0; k < sessions; k++) {
          const from = day + Math.floor((k * DAY) / sessions) + ((p * 7_919) % 600_000)
          await add({
            ...pod,
            component: 'gpu',
            quantity: 1 + (p % 4),
            priceMicros: 690_000 * (1 + (p % 4)),
            periodMs: HOUR_MS,
            startedAt: from,
            endedAt: from + 55 * 60_000,
          })
        }
      }
      for (let from = start; from < now - 30 * DAY; from += 30 * DAY)
        await add({
          ...pod,
          component: 'disk',
          quantity: 50,
          priceMicros: 5_000_000,
          periodMs: MONTH_MS,
          startedAt: from,
          endedAt: from + 30 * DAY,
        })
    }
    // Endpoints: 20 worker sessions of 40 minutes a day each, CPU compute and container disk.
    const workers = Math.max(1, Math.round(20 * scale))
    for (let e = 0; e < 20; e++) {
      for (let day = start, d = 0; day + DAY <= now; day += DAY, d++) {
        for (let k = 0; k < workers; k++) {
          const from = day + Math.floor((k * DAY) / workers)
          const w = {
            ...base,
            product: 'serverless' as const,
            resourceId: `ep${e}`,
            partId: `w${e}-${d}-${k}`,
            gpuTypeId: null,
            startedAt: from,
            endedAt: from + 40 * 60_000,
          }
          await add({ ...w, component: 'cpu', quantity: 4, priceMicros: 144_000, periodMs: HOUR_MS })
          await add({ ...w, component: 'disk', quantity: 10, priceMicros: 1_000_000, periodMs: MONTH_MS })
        }
      }
    }
    await flush()
  } finally {
    await store.close()
  }
  return count
}
