import { MemoryCounterStore } from '../../src/ratelimit/MemoryCounterStore.js'
import { RateLimiter } from '../../src/ratelimit/RateLimiter.js'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { accountKey, cpuMs, load, startServer, type BenchContext, type BenchServer, type Row } from '../lib.js'
import { inclusiveShareDir } from '../profile.js'

/**
 * Workload 8: what quota accounting costs per request. The same GET through the server with and without
 * quota accounting (an exempt account skips it), on two routes: a trivial one (a catalog entry) and
 * GET /v2/serverless/{id}. Runs alternate between the two accounts in rounds, so load from other programs
 * falls on both alike; the figure is server CPU per request (CPU time moves less with competing load than
 * req/s does, but on a loaded machine still swings by tens of percent per round). Then the same load
 * under --cpu-prof: the share of the server's busy time inside quota accounting (the hook, the limiter,
 * the counters, structured-headers), a ratio within one run that load from other programs barely moves;
 * it leaves out Node writing the two extra headers. Also the limiter's own cost per call in-process.
 */
export async function limitOverhead(ctx: BenchContext): Promise<Row[]> {
  const seconds = ctx.quick ? 2 : 4
  const rounds = ctx.quick ? 1 : 3
  const s = await startServer({ rateLimits: { management: { minute: 1e9, hour: 1e9, day: 1e9 } } })
  const rows: Row[] = []
  let exemptRps = 0
  try {
    const accounts = { exempt: await accountKey(s, 'exempt', true), limited: await accountKey(s, 'limited') }
    const endpoint = async (key: string) => {
      const body = {
        name: 'bench',
        type: 'QUEUE',
        image: 'hangar/echo:latest',
        cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
        scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
      }
      const created = await s.api('POST', '/v2/serverless', body, key)
      if (created.status !== 201) throw new Error(`create endpoint: ${created.status} ${JSON.stringify(created.body)}`)
      return `/v2/serverless/${created.body.id}`
    }
    const routes = [
      {
        name: 'GET /v2/catalog/cpus/{id}',
        path: { exempt: '/v2/catalog/cpus/cpu3c', limited: '/v2/catalog/cpus/cpu3c' },
      },
      {
        name: 'GET /v2/serverless/{id}',
        path: { exempt: await endpoint(accounts.exempt), limited: await endpoint(accounts.limited) },
      },
    ]
    for (const route of routes) {
      const total = { exempt: { cpuMs: 0, requests: 0, ms: 0 }, limited: { cpuMs: 0, requests: 0, ms: 0 } }
      const ratios: number[] = []
      for (const who of ['exempt', 'limited'] as const) await measure(s, route.path[who], accounts[who], 1) // warm-up
      for (let r = 0; r < rounds; r++) {
        const perRound = { exempt: 0, limited: 0 }
        for (const who of ['exempt', 'limited'] as const) {
          const m = await measure(s, route.path[who], accounts[who], seconds)
          total[who].cpuMs += m.cpuMs
          total[who].requests += m.requests
          total[who].ms += seconds * 1000
          perRound[who] = m.cpuMs / m.requests
        }
        ratios.push(perRound.limited / perRound.exempt)
      }
      const us = (t: { cpuMs: number; requests: number }) => (t.cpuMs * 1000) / t.requests
      const rps = (t: { requests: number; ms: number }) => (t.requests * 1000) / t.ms
      if (route === routes[0]) exemptRps = rps(total.exempt)
      const cost = (us(total.limited) / us(total.exempt) - 1) * 100
      const spread = ratios.map((x) => `${Math.round((x - 1) * 1000) / 10}`).join(', ')
      rows.push(
        {
          workload: '8 limit overhead',
          metric: `${route.name} exempt (auth only)`,
          value: Math.round(rps(total.exempt)),
          unit: 'req/s',
          note: `server CPU ${Math.round(us(total.exempt))} µs per request`,
        },
        {
          workload: '8 limit overhead',
          metric: `${route.name} with quota accounting`,
          value: Math.round(rps(total.limited)),
          unit: 'req/s',
          note: `server CPU ${Math.round(us(total.limited))} µs per request`,
        },
        {
          workload: '8 limit overhead',
          metric: `${route.name}: server CPU cost of quotas`,
          value: Math.round(cost * 10) / 10,
          unit: '%',
          goal: '<= 5 %',
          met: cost <= 5,
          note: `per round: ${spread} %`,
        },
      )
    }
  } finally {
    await s.stop()
  }
  rows.push(await profiledShare(seconds * rounds))
  const limiter = new RateLimiter({
    counters: new MemoryCounterStore(),
    clock: { now: () => Date.now() },
    quotas: { minute: 1e9, hour: 1e9, day: 1e9 },
    perWorker: { rate: 500, concurrent: 100 },
    runningWorkers: () => 0,
  })
  const n = ctx.quick ? 20_000 : 200_000
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < n; i++) await limiter.quota(`acc-${i % 100}`)
  const quotaNs = Number(process.hrtime.bigint() - t0) / n
  rows.push({
    workload: '8 limit overhead',
    metric: 'limiter.quota() per call',
    value: Math.round(quotaNs),
    unit: 'ns',
    note: `${((quotaNs / (1e9 / exemptRps)) * 100).toFixed(1)} % of one trivial request's wall time`,
  })
  return rows
}

/** Server CPU and requests of one load run. */
async function measure(
  s: BenchServer,
  path: string,
  key: string,
  seconds: number,
): Promise<{ cpuMs: number; requests: number }> {
  const c0 = cpuMs(s.child.pid!)
  const r = await load({ url: s.url + path, headers: { authorization: `Bearer ${key}` }, connections: 16, seconds })
  return { cpuMs: cpuMs(s.child.pid!) - c0, requests: r.total }
}

/** Quota accounting's share of a profiled server's busy time under the trivial GET, from an account with quotas. */
async function profiledShare(seconds: number): Promise<Row> {
  const dir = mkdtempSync(join(tmpdir(), 'hangar-prof-'))
  try {
    const s = await startServer(
      { rateLimits: { management: { minute: 1e9, hour: 1e9, day: 1e9 } } },
      {},
      { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`] },
    )
    try {
      const key = await accountKey(s, 'limited')
      await load({
        url: `${s.url}/v2/catalog/cpus/cpu3c`,
        headers: { authorization: `Bearer ${key}` },
        connections: 16,
        seconds,
      })
    } finally {
      await s.stop()
    }
    const share = inclusiveShareDir(
      dir,
      (f) => /\/api\/rateLimit\.js$|\/ratelimit\/|\/structured-headers\//.test(f.url),
      'quota',
    )
    return {
      workload: '8 limit overhead',
      metric: 'GET /v2/catalog/cpus/{id}: quota accounting in a CPU profile',
      value: Math.round(share * 10) / 10,
      unit: '% of busy',
      goal: '<= 5 %',
      met: share <= 5,
      note: 'inclusive time of the rate-limit hook, limiter, counters and structured-headers',
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
