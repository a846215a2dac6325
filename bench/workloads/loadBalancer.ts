import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Agent, request } from 'undici'
import {
  accountKey,
  childPids,
  cpuMeter,
  jobServerConfig,
  load,
  percentile,
  round,
  startBareFastify,
  startServer,
  until,
  type BenchContext,
  type BenchServer,
  type Row,
} from '../lib.js'
import { median } from './coldStart.js'

const W = 'lb load balancer'

/**
 * Workload 9: LOAD_BALANCER traffic. The shipped HTTP worker (hangar/http) is called through the proxy
 * (`/lb/{id}/whoami`: auth, balancer, reply-from) and directly on the port its runtime published, in the
 * same run: throughput with 16 connections (autocannon), and latency of sequential requests on one
 * keep-alive connection (µs resolution, where autocannon reports whole ms). Plus the LB cold start: the
 * first request to an endpoint with no worker, answered once the new worker's health check says 200.
 */
export async function loadBalancerBench(ctx: BenchContext): Promise<Row[]> {
  const seconds = ctx.quick ? 2 : 10
  const sequential = ctx.quick ? 500 : 5_000
  const colds = ctx.quick ? 2 : 5
  const s = await startServer(jobServerConfig({ loadBalancer: { startingHealthIntervalMs: 20 } }))
  try {
    const key = await accountKey(s, 'bench', true)
    const coldMs: number[] = []
    for (let i = 0; i < colds; i++) coldMs.push(await coldStart(s, key, i))

    const ep = await lbEndpoint(s, key, 'lb-load')
    const auth = { authorization: `Bearer ${key}` }
    const first = await fetch(`${s.url}/lb/${ep}/whoami`, { headers: auth })
    const { worker } = (await first.json()) as { worker: string }
    const direct = `http://127.0.0.1:${publishedPort(s, worker)}/whoami`
    const proxied = `${s.url}/lb/${ep}/whoami`

    await load({ url: direct, connections: 16, seconds: 1 }) // warm-up
    await load({ url: proxied, headers: auth, connections: 16, seconds: 1 })
    // CPU per request of the control plane and the worker: unlike req/s, barely moved by other programs on the cores.
    const workers = childPids(s.child.pid!)
    let meter = cpuMeter(s.child.pid!, workers)
    const d = await load({ url: direct, connections: 16, seconds })
    const dCpu = meter(d.total)
    meter = cpuMeter(s.child.pid!, workers)
    const p = await load({ url: proxied, headers: auth, connections: 16, seconds })
    const pCpu = meter(p.total)
    // The floor: the same proxy library (@fastify/reply-from on undici) in a bare Fastify process, no auth,
    // balancer, hooks or header rewriting, loaded and timed the same way.
    const bare = await startBareFastify(
      `f.register(require('@fastify/reply-from'), { base: ${JSON.stringify(new URL(direct).origin)}, undici: { connections: 1024 } }); f.all('/*', (req, reply) => { reply.from(req.url) })`,
    )
    let bl: { p50: number; p99: number }
    let b: Awaited<ReturnType<typeof load>>
    let bCpu: ReturnType<ReturnType<typeof cpuMeter>>
    try {
      const bareUrl = `${bare.url}/whoami`
      await load({ url: bareUrl, connections: 16, seconds: 1 })
      meter = cpuMeter(bare.pid, workers)
      b = await load({ url: bareUrl, connections: 16, seconds })
      bCpu = meter(b.total)
      bl = await latencies(bareUrl, {}, sequential)
    } finally {
      bare.stop()
    }
    const dl = await latencies(direct, {}, sequential)
    const pl = await latencies(proxied, auth, sequential)
    const ratio = p.rps / d.rps
    const added = pl.p50 - dl.p50
    const cpuRatio = pCpu.server / bCpu.server
    return [
      {
        workload: W,
        metric: 'req/s direct to the worker',
        value: Math.round(d.rps),
        unit: 'req/s',
        note: `16 connections, ${seconds} s; p50 ${d.p50} ms, p99 ${d.p99} ms (autocannon)`,
      },
      {
        workload: W,
        metric: 'req/s through the proxy',
        value: Math.round(p.rps),
        unit: 'req/s',
        note: `p50 ${p.p50} ms, p99 ${p.p99} ms; non-2xx ${p.non2xx}`,
      },
      {
        workload: W,
        metric: 'proxy / direct throughput',
        value: round(ratio, 2),
        unit: 'x',
        goal: '>= 0.8 x',
        met: ratio >= 0.8,
        note: 'client, proxy and worker share the cores',
      },
      {
        workload: W,
        metric: 'floor: bare reply-from proxy, req/s',
        value: Math.round(b.rps),
        unit: 'req/s',
        note: `p50 ${b.p50} ms, p99 ${b.p99} ms; Fastify + @fastify/reply-from (undici) forwarding every path to the same worker, nothing else`,
      },
      {
        workload: W,
        metric: 'floor: bare reply-from proxy, CPU per request',
        value: round(bCpu.server),
        unit: 'µs',
        note: `worker CPU per request ${round(bCpu.workers)} µs`,
      },
      {
        workload: W,
        metric: 'control-plane CPU per proxied request',
        value: round(pCpu.server),
        unit: 'µs',
        note: `worker CPU per request: ${round(pCpu.workers)} µs proxied, ${round(dCpu.workers)} µs direct`,
      },
      {
        workload: W,
        metric: 'control-plane CPU per proxied request / bare proxy',
        value: round(cpuRatio, 2),
        unit: 'x',
        goal: '<= 2 x',
        met: cpuRatio <= 2,
      },
      {
        workload: W,
        metric: 'p50 direct (sequential)',
        value: round(dl.p50 * 1000),
        unit: 'µs',
        note: `p99 ${round(dl.p99 * 1000)} µs, ${sequential} requests on one connection`,
      },
      {
        workload: W,
        metric: 'p50 through the proxy (sequential)',
        value: round(pl.p50 * 1000),
        unit: 'µs',
        note: `p99 ${round(pl.p99 * 1000)} µs`,
      },
      {
        workload: W,
        metric: 'added p50 latency',
        value: round(added * 1000),
        unit: 'µs',
        goal: '<= 300 µs',
        met: added <= 0.3,
        note: `the bare proxy adds ${round((bl.p50 - dl.p50) * 1000)} µs (p50 ${round(bl.p50 * 1000)} µs, p99 ${round(bl.p99 * 1000)} µs)`,
      },
      {
        workload: W,
        metric: 'cold start: first request answered',
        value: round(median(coldMs)),
        unit: 'ms',
        note: `median of ${colds}, hangar/http (node, 0 ms init), worker start + health check + proxy; all: ${coldMs.map((c) => round(c)).join(', ')} ms`,
      },
    ]
  } finally {
    await s.stop()
  }
}

async function lbEndpoint(s: BenchServer, key: string, name: string): Promise<string> {
  const body = {
    name,
    type: 'LOAD_BALANCER',
    image: 'hangar/http:latest',
    cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
    scaling: { type: 'REQUEST_COUNT', requestCount: 1000 },
    workers: { min: 0, max: 1, idleTimeout: 60 },
    env: { HTTP_INIT_MS: '0' },
  }
  const r = await s.api('POST', '/v2/serverless', body, key)
  if (r.status !== 201) throw new Error(`create endpoint: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body.id
}

async function coldStart(s: BenchServer, key: string, i: number): Promise<number> {
  const ep = await lbEndpoint(s, key, `lb-cold-${i}`)
  const t0 = performance.now()
  const res = await fetch(`${s.url}/lb/${ep}/whoami`, { headers: { authorization: `Bearer ${key}` } })
  const ms = performance.now() - t0
  if (res.status !== 200) throw new Error(`cold LB request: ${res.status} ${await res.text()}`)
  await res.arrayBuffer()
  // The next cold start must not wait for capacity this worker holds.
  await s.api('DELETE', `/v2/serverless/${ep}`, undefined, key)
  await until(
    'the worker of a deleted endpoint to stop',
    async () =>
      (await s.api('GET', `/v2/serverless`, undefined, key)).body.endpoints.every((e: { id: string }) => e.id !== ep),
    10_000,
    50,
  )
  return ms
}

/** The host port the process runtime gave the worker's PORT (bench-only: read from the runtime's own file). */
function publishedPort(s: BenchServer, workerId: string): number {
  const ports = JSON.parse(readFileSync(join(s.dataDir, 'data', 'workers', workerId, 'ports.json'), 'utf8')) as Array<{
    publicPort: number
  }>
  return ports[0].publicPort
}

/** p50/p99 (ms) of `n` sequential GETs on one keep-alive connection. */
async function latencies(
  url: string,
  headers: Record<string, string>,
  n: number,
): Promise<{ p50: number; p99: number }> {
  const agent = new Agent({ connections: 1 })
  try {
    const times: number[] = []
    for (let i = 0; i < n + 50; i++) {
      const t0 = performance.now()
      const res = await request(url, { headers, dispatcher: agent })
      await res.body.dump()
      if (i >= 50) times.push(performance.now() - t0)
    }
    times.sort((a, b) => a - b)
    return { p50: percentile(times, 50), p99: percentile(times, 99) }
  } finally {
    await agent.close()
  }
}
