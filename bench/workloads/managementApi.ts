import {
  accountKey,
  cpuMeter,
  load,
  round,
  startBareFastify,
  startServer,
  type BenchContext,
  type Row,
} from '../lib.js'

/** Workload 6: GET and POST /v2/serverless under concurrent load. */
export async function managementApi(ctx: BenchContext): Promise<Row[]> {
  const s = await startServer()
  try {
    // An exempt account: quotas would otherwise stop the load at 600 a minute.
    const key = await accountKey(s, 'bench', true)
    const body = {
      name: 'bench',
      type: 'QUEUE',
      image: 'hangar/echo:latest',
      cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
      scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
    }
    const created = await s.api('POST', '/v2/serverless', body, key)
    if (created.status !== 201) throw new Error(`create endpoint: ${created.status} ${JSON.stringify(created.body)}`)
    const seconds = ctx.quick ? 2 : 10
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
    const meter = cpuMeter(s.child.pid!, [])
    const get = await load({ url: `${s.url}/v2/serverless/${created.body.id}`, headers, connections: 32, seconds })
    const getCpu = meter(get.total).server
    const post = await load({
      url: `${s.url}/v2/serverless`,
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      connections: 16,
      seconds,
    })
    const bare = await bareFastify(JSON.stringify(created.body), headers, seconds)
    const w = '6 management API'
    return [
      {
        workload: w,
        metric: 'GET /v2/serverless/{id}',
        value: Math.round(get.rps),
        unit: 'req/s',
        goal: '>= 30000',
        met: get.rps >= 30_000,
        note: `p99 ${get.p99} ms, ${get.non2xx} non-2xx; ${round(get.rps / bare.rps, 2)}x bare Fastify in the same run`,
      },
      {
        workload: w,
        metric: 'GET server CPU per request',
        value: round(getCpu),
        unit: 'µs',
        note: `bare Fastify ${round(bare.cpuUs)} µs`,
      },
      {
        workload: w,
        metric: 'GET server CPU per request / bare Fastify',
        value: round(getCpu / bare.cpuUs, 2),
        unit: 'x',
        goal: '<= 1.6 x',
        met: getCpu / bare.cpuUs <= 1.6,
        note: 'the same document, connections and load generator',
      },
      {
        workload: w,
        metric: 'bare Fastify, same document',
        value: Math.round(bare.rps),
        unit: 'req/s',
        note: 'the ceiling on this machine: one route returning the endpoint JSON, no auth, store or schema; same load generator and connections',
      },
      { workload: w, metric: 'GET p99', value: get.p99, unit: 'ms' },
      {
        workload: '6 management API',
        metric: 'POST /v2/serverless',
        value: Math.round(post.rps),
        unit: 'req/s',
        note: `p99 ${post.p99} ms, ${post.non2xx} non-2xx`,
      },
      { workload: '6 management API', metric: 'POST p99', value: post.p99, unit: 'ms' },
    ]
  } finally {
    await s.stop()
  }
}

/**
 * The HTTP stack's own ceiling on this machine: a Fastify process with one route answering the same JSON,
 * loaded like the GET above (requests/s, and server CPU per request).
 */
async function bareFastify(
  doc: string,
  headers: Record<string, string>,
  seconds: number,
): Promise<{ rps: number; cpuUs: number }> {
  const bare = await startBareFastify(`f.get('/x', async () => JSON.parse(${JSON.stringify(doc)}))`)
  try {
    const meter = cpuMeter(bare.pid, [])
    const r = await load({ url: `${bare.url}/x`, headers, connections: 32, seconds })
    return { rps: r.rps, cpuUs: meter(r.total).server }
  } finally {
    bare.stop()
  }
}
