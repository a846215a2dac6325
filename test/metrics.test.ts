import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { Readable } from 'node:stream'
import { getMetricsFromStream, type PromHistogramData, type PromMetrics } from 'prom2javascript'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createEndpoint, endpointBody, jobCall, waitFinal } from './helpers/endpoints.js'
import { createPod, podBody, terminateAll } from './helpers/pods.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

const TOKEN = 'scrape-token-0123456789'

/** Scrapes /metrics with `key` and parses it with a real Prometheus text-format parser. */
async function scrape(s: TestServer, key = TOKEN): Promise<PromMetrics> {
  const res = await fetch(`${s.url}/metrics`, { headers: { authorization: `Bearer ${key}` } })
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/)
  // The format allows NaN (the event-loop lag mean before its first sample); prom2javascript's value pattern
  // does not, so those samples are left out of what it parses (the text-format test below checks their spelling).
  const text = (await res.text()).replace(/^.* NaN\n/gm, '')
  return getMetricsFromStream(Readable.from([text]))
}

type Sample = { labels: Record<string, string>; value?: number; count?: number; sum?: number }

function samples(m: PromMetrics, name: string, labels: Record<string, string> = {}): Sample[] {
  const family = m[name]
  if (!family) throw new Error(`no metric family ${name}`)
  return (family.data as Sample[]).filter((d) => Object.entries(labels).every(([k, v]) => d.labels[k] === v))
}

/** The sum of the matching samples' values (counters, gauges) or counts (histograms). */
const value = (m: PromMetrics, name: string, labels: Record<string, string> = {}) =>
  samples(m, name, labels).reduce((sum, d) => sum + (d.value ?? d.count ?? 0), 0)

describe('/metrics', () => {
  let s: TestServer
  let echo: string
  let held: string
  let receiver: Server
  let hookUrl = ''
  beforeAll(async () => {
    s = await startTestServer({ metricsToken: TOKEN, rateLimits: { management: { minute: 3, hour: 100, day: 1000 } } })
    receiver = createServer((req, res) => req.resume().on('end', () => res.end('ok')))
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r))
    hookUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`
    echo = (await createEndpoint(s, endpointBody('hangar/echo:latest'))).id
    // No worker may start here, so its jobs stay queued.
    held = (await createEndpoint(s, endpointBody('hangar/echo:latest', { name: 'held', workers: { min: 0, max: 0 } })))
      .id
  })
  afterAll(async () => {
    await s.stop()
    await new Promise((r) => receiver.close(r))
  })

  it('answers only admin keys and the scrape token', async () => {
    const none = await fetch(`${s.url}/metrics`)
    expect(none.status).toBe(401)
    expect((await none.json()).detail).toMatch(/admin key or metrics token/)
    const user = await s.accountKey('metrics-user')
    const denied = await fetch(`${s.url}/metrics`, { headers: { authorization: `Bearer ${user}` } })
    expect(denied.status).toBe(403)
    expect((await fetch(`${s.url}/metrics`, { headers: { authorization: `Bearer ${s.adminKey}` } })).status).toBe(200)
    expect((await fetch(`${s.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200)
  })

  it('reports jobs, queues, workers, cold starts, durations, latency by route, webhooks and refusals after a workload', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await jobCall(s, 'POST', `/v2/${echo}/runsync`, { input: { i } })
      expect(r.body.status).toBe('COMPLETED')
    }
    const hooked = await jobCall(s, 'POST', `/v2/${echo}/run`, { input: { hook: true }, webhook: hookUrl })
    expect((await waitFinal(s, echo, hooked.body.id)).status).toBe('COMPLETED')
    for (let i = 0; i < 2; i++) expect((await jobCall(s, 'POST', `/v2/${held}/run`, { input: { i } })).status).toBe(200)
    // An ordinary account with a quota of 3 per minute gets its 4th request refused (admin keys are exempt).
    const user = await s.accountKey('quota-user')
    const statuses: number[] = []
    for (let i = 0; i < 4; i++) statuses.push((await s.api('GET', '/v2/templates', undefined, user)).status)
    expect(statuses).toEqual([200, 200, 200, 429])

    // The webhook is delivered off the job path: wait for its counter.
    const m = await until(
      async () => {
        const m = await scrape(s)
        return value(m, 'hangar_webhook_deliveries_total', { outcome: 'delivered' }) === 1 ? m : undefined
      },
      20_000,
      'webhook delivered metric',
    )

    expect(value(m, 'hangar_jobs_finished_total', { endpoint: echo, status: 'COMPLETED' })).toBe(4)
    expect(value(m, 'hangar_jobs', { endpoint: echo, status: 'COMPLETED' })).toBe(4)
    expect(value(m, 'hangar_jobs', { endpoint: held, status: 'IN_QUEUE' })).toBe(2)
    expect(value(m, 'hangar_queue_depth', { endpoint: held })).toBe(2)
    expect(value(m, 'hangar_queue_depth', { endpoint: echo })).toBe(0)
    expect(value(m, 'hangar_queue_oldest_wait_seconds', { endpoint: held })).toBeGreaterThan(0)

    const duration = samples(m, 'hangar_job_duration_seconds', { endpoint: echo, status: 'COMPLETED' })
    expect(duration).toHaveLength(1)
    expect(duration[0].count).toBe(4)
    expect(m.hangar_job_duration_seconds.type).toBe('histogram')
    expect((duration[0] as PromHistogramData).buckets['+Inf']).toBe(4)

    // One worker served all four jobs: one cold start, and it is still there (idle or just finishing).
    const cold = samples(m, 'hangar_worker_cold_start_seconds', { endpoint: echo })
    expect(cold[0].count).toBe(1)
    expect(cold[0].sum).toBeGreaterThan(0)
    const workers = samples(m, 'hangar_workers', { endpoint: echo })
    expect(workers.map((w) => w.labels.status).sort()).toEqual([
      'IDLE',
      'INITIALIZING',
      'RUNNING',
      'THROTTLED',
      'UNHEALTHY',
    ])
    expect(
      value(m, 'hangar_workers', { endpoint: echo, status: 'IDLE' }) +
        value(m, 'hangar_workers', { endpoint: echo, status: 'RUNNING' }),
    ).toBe(1)

    // Latency is labelled by route pattern: no job or endpoint id in any route label.
    const http = samples(m, 'hangar_http_request_duration_seconds')
    expect(
      value(m, 'hangar_http_request_duration_seconds', {
        route: '/v2/:endpointId/runsync',
        method: 'POST',
        status_code: '200',
      }),
    ).toBe(3)
    expect(value(m, 'hangar_http_request_duration_seconds', { route: '/v2/templates', status_code: '429' })).toBe(1)
    for (const h of http) expect(h.labels.route).not.toMatch(new RegExp(`${echo}|${held}`))

    expect(value(m, 'hangar_rate_limit_refusals_total', { scope: 'management' })).toBe(1)
    expect(value(m, 'hangar_webhook_deliveries_total', { outcome: 'failed' })).toBe(0)

    // An endpoint without workers reads 0 in every status rather than having no series.
    const none = samples(m, 'hangar_workers', { endpoint: held })
    expect(none.map((w) => [w.labels.status, w.value]).sort()).toEqual([
      ['IDLE', 0],
      ['INITIALIZING', 0],
      ['RUNNING', 0],
      ['THROTTLED', 0],
      ['UNHEALTHY', 0],
    ])
    // Names come as an info series to join on.
    expect(samples(m, 'hangar_endpoint_info', { endpoint: held })).toEqual([
      expect.objectContaining({ labels: { endpoint: held, name: 'held', type: 'QUEUE' }, value: 1 }),
    ])
  })

  it('keeps the route labels bounded: 1,000 different console asset paths make one series', async () => {
    const before = samples(await scrape(s), 'hangar_http_request_duration_seconds').length
    const index = await (await fetch(`${s.url}/console/`)).text()
    const asset = /src="(\/console\/assets\/[^"]+\.js)"/.exec(index)?.[1]
    if (asset) expect((await fetch(s.url + asset)).status).toBe(200)
    for (let i = 0; i < 1000; i++)
      await (await fetch(`${s.url}/console/assets/index-${i.toString(36)}${i}.js`)).arrayBuffer()
    const m = await scrape(s)
    const http = samples(m, 'hangar_http_request_duration_seconds')
    expect(http.filter((h) => h.labels.route.includes('assets'))).toEqual([])
    expect(
      value(m, 'hangar_http_request_duration_seconds', { route: '/console/*', method: 'GET', status_code: '200' }),
    ).toBeGreaterThanOrEqual(1000)
    // At most the few new label sets of this test (index, asset, scrapes), not one per path.
    expect(http.length - before).toBeLessThan(6)
  })

  it('serves every series the Grafana dashboard in docs/ queries', async () => {
    const dashboard = JSON.parse(readFileSync(new URL('../docs/grafana/hangar.json', import.meta.url), 'utf8')) as {
      panels: Array<{ targets: Array<{ expr: string }> }>
    }
    const names = new Set(
      dashboard.panels.flatMap((p) => p.targets.flatMap((t) => t.expr.match(/\b(hangar|process|nodejs)_\w+/g) ?? [])),
    )
    expect(names.size).toBeGreaterThan(10)
    // The families as declared (`# TYPE name type`).
    const text = await (await fetch(`${s.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text()
    const families = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((x) => x[1]))
    for (const name of names) expect(families.has(name.replace(/_(bucket|count|sum)$/, '')), name).toBe(true)
  })

  it('counts pods by status, every status present, and the CPU and memory of running ones', async () => {
    const owner = await s.accountKey('metrics-pods')
    try {
      const pod = await createPod(s, podBody({ name: 'scraped' }), owner)
      // Watched in the store: this server's management limit (100 an hour) would not last a slow start's polling.
      await until(async () => (await s.hangar.store.pods.get(pod.id))?.status === 'RUNNING', 30_000, 'the pod RUNNING')
      const m = await scrape(s)
      expect(
        samples(m, 'hangar_pods')
          .map((p) => p.labels.status)
          .sort(),
      ).toEqual(['ERROR', 'EXITED', 'PROVISIONING', 'RUNNING', 'STARTING', 'TERMINATED'])
      expect(value(m, 'hangar_pods', { status: 'RUNNING' })).toBe(1)
      expect(samples(m, 'hangar_pod_cpu_percent', { pod: pod.id, name: 'scraped' })).toHaveLength(1)
      expect(samples(m, 'hangar_pod_memory_percent', { pod: pod.id })).toHaveLength(1)
    } finally {
      await terminateAll(s, owner)
    }
  })
})

describe('the text format', () => {
  it('spells a NaN value NaN, as the format does (prom-client writes Nan)', async () => {
    const { PromMetrics } = await import('../src/metrics/PromMetrics.js')
    const { Gauge } = await import('prom-client')
    const m = new PromMetrics({ jobCounts: async () => [], now: () => 0, processMetrics: false })
    new Gauge({
      name: 'test_not_a_number',
      help: 'NaN, as the event-loop lag mean before its first sample',
      registers: [m.registry],
    }).set(Number.NaN)
    const { body } = await m.render()
    expect(body).toMatch(/^test_not_a_number NaN$/m)
    expect(body).not.toMatch(/ Nan$/m)
  })
})
