import { accountKey, load, startServer, type BenchContext, type Row } from '../lib.js'

/** Workload 6: GET and POST /v2/serverless under concurrent load. */
export async function managementApi(ctx: BenchContext): Promise<Row[]> {
  const s = await startServer()
  try {
    // An exempt account: quotas would otherwise stop the load at 600 a minute.
    const key = await accountKey(s, 'bench', true)
    const body = { name: 'bench', type: 'QUEUE', image: 'hangar/echo:latest', cpu: [{ id: 'cpu3c', vcpuCount: 2 }], scaling: { type: 'QUEUE_DELAY', queueDelay: 4 } }
    const created = await s.api('POST', '/v2/serverless', body, key)
    if (created.status !== 201) throw new Error(`create endpoint: ${created.status} ${JSON.stringify(created.body)}`)
    const seconds = ctx.quick ? 2 : 10
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
    const get = await load({ url: `${s.url}/v2/serverless/${created.body.id}`, headers, connections: 32, seconds })
    const post = await load({ url: `${s.url}/v2/serverless`, method: 'POST', headers, body: JSON.stringify(body), connections: 16, seconds })
    return [
      { workload: '6 management API', metric: 'GET /v2/serverless/{id}', value: Math.round(get.rps), unit: 'req/s', goal: '>= 10000', met: get.rps >= 10_000, note: `p99 ${get.p99} ms, ${get.non2xx} non-2xx` },
      { workload: '6 management API', metric: 'GET p99', value: get.p99, unit: 'ms' },
      { workload: '6 management API', metric: 'POST /v2/serverless', value: Math.round(post.rps), unit: 'req/s', note: `p99 ${post.p99} ms, ${post.non2xx} non-2xx` },
      { workload: '6 management API', metric: 'POST p99', value: post.p99, unit: 'ms' },
    ]
  } finally {
    await s.stop()
  }
}
