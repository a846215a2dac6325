import { randomBytes } from 'node:crypto'
import http from 'node:http'
import { Readable } from 'node:stream'
import { request } from 'undici'
import { WebSocket } from 'ws'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from './helpers/clock.js'
import { createEndpoint, endpointBody } from './helpers/endpoints.js'
import { lbBody, lbFetch } from './helpers/lb.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

const MB = 1024 * 1024

describe('LOAD_BALANCER traffic through requestUrls.base', () => {
  let s: TestServer
  let ep: { id: string; requestUrls: { base: string; health: string } }
  beforeAll(async () => {
    s = await startTestServer({
      jobs: { pingIntervalMs: 500, crashBackoffMs: 100 },
      loadBalancer: {
        healthIntervalMs: 100,
        startingHealthIntervalMs: 30,
        requestTimeoutMs: 1_500,
        maxBodyBytes: 4 * MB,
      },
    })
    ep = (await createEndpoint(s, lbBody())) as typeof ep
  })
  afterAll(() => s.stop())

  it('cold-starts a worker for the first request and answers once its health check says 200', async () => {
    expect(ep.requestUrls.base).toBe(`${s.url}/lb/${ep.id}`)
    const res = await lbFetch(s, ep.id, '/whoami')
    expect(res.status).toBe(200)
    const { worker } = (await res.json()) as { worker: string }
    const list = await s.api('GET', `/v2/serverless/${ep.id}/workers`)
    expect(list.body.workers).toEqual([expect.objectContaining({ id: worker, health: 'READY' })])
  })

  it('passes 1 MB bodies both ways byte for byte', async () => {
    const body = randomBytes(MB)
    const res = await lbFetch(s, ep.id, '/echo', {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/octet-stream' },
    })
    expect(res.status).toBe(200)
    expect(Buffer.from(await res.arrayBuffer()).equals(body)).toBe(true)
  })

  it('keeps the API key and hop-by-hop headers from the worker and says who forwarded', async () => {
    // node:http, since fetch and undici refuse to send a Connection header.
    const seen = await new Promise<Record<string, string>>((resolve, reject) => {
      const headers = {
        authorization: `Bearer ${s.adminKey}`,
        'x-app': 'a',
        connection: 'keep-alive, x-trace',
        'x-trace': 't',
        'keep-alive': 'timeout=5',
      }
      http
        .get(`${s.url}/lb/${ep.id}/headers?x=1`, { headers }, (res) => {
          let text = ''
          res.on('data', (c) => (text += c)).on('end', () => resolve(JSON.parse(text)))
        })
        .once('error', reject)
    })
    expect(seen.authorization).toBeUndefined()
    expect(seen['x-trace']).toBeUndefined()
    expect(seen['keep-alive']).toBeUndefined()
    expect(seen).toMatchObject({ 'x-app': 'a', 'x-forwarded-prefix': `/lb/${ep.id}`, 'x-forwarded-proto': 'http' })
    expect(seen['x-forwarded-for']).toBeTruthy()
  })

  it('streams the response as the worker writes it (the first event arrives before the last is written)', async () => {
    const res = await lbFetch(s, ep.id, '/stream?count=4&delayMs=400')
    expect(res.headers.get('content-type')).toBe('text/event-stream')
    const arrivals: number[] = []
    const events: Array<{ i: number; at: number }> = []
    let buf = ''
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buf += Buffer.from(chunk).toString()
      for (let sep = buf.indexOf('\n\n'); sep >= 0; sep = buf.indexOf('\n\n')) {
        events.push(JSON.parse(buf.slice(6, sep)))
        arrivals.push(Date.now())
        buf = buf.slice(sep + 2)
      }
    }
    expect(events.map((e) => e.i)).toEqual([1, 2, 3, 4])
    // Same machine, same clock: the first event reached the client before the worker wrote the last one.
    expect(arrivals[0]).toBeLessThan(events[3].at)
  })

  it('proxies WebSocket upgrades: text and binary messages echo back', async () => {
    const ws = new WebSocket(`${s.url.replace('http', 'ws')}/lb/${ep.id}/ws`, {
      headers: { authorization: `Bearer ${s.adminKey}` },
    })
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject))
    const next = () =>
      new Promise<{ data: Buffer; binary: boolean }>((resolve) =>
        ws.once('message', (data, binary) => resolve({ data: data as Buffer, binary })),
      )
    let reply = next()
    ws.send('hello')
    expect(await reply).toEqual({ data: Buffer.from('hello'), binary: false })
    const bytes = randomBytes(1000)
    reply = next()
    ws.send(bytes)
    const got = await reply
    expect(got.binary).toBe(true)
    expect(got.data.equals(bytes)).toBe(true)
    ws.close()
  })

  it('refuses a request or upgrade without a key (401), and a RESTRICTED key of another endpoint (403)', async () => {
    const res = await lbFetch(s, ep.id, '/whoami', { key: null })
    expect(res.status).toBe(401)
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="hangar"')
    expect(res.headers.get('content-type')).toMatch(/problem\+json/)
    // A RESTRICTED key names endpoints of its own account: one of lb-other's, not ep.
    const otherEp = await createEndpoint(s, endpointBody(), await s.accountKey('lb-other'))
    const other = await s.accountKey('lb-other', 'RESTRICTED', [otherEp.id])
    expect((await lbFetch(s, ep.id, '/whoami', { key: other })).status).toBe(403)
    const ws = new WebSocket(`${s.url.replace('http', 'ws')}/lb/${ep.id}/ws`)
    const refused = await new Promise<{ status: number; challenge?: string }>((resolve) =>
      ws
        .once('unexpected-response', (_req, r) =>
          resolve({ status: r.statusCode ?? 0, challenge: r.headers['www-authenticate'] }),
        )
        .once('error', () => resolve({ status: -1 })),
    )
    expect(refused).toEqual({ status: 401, challenge: 'Bearer realm="hangar"' })
  })

  it('answers 413 to a body over the limit, declared or chunked', async () => {
    const declared = await lbFetch(s, ep.id, '/echo', { method: 'POST', body: Buffer.alloc(5 * MB) })
    expect(declared.status).toBe(413)
    // No length declared: the proxy counts what passes and stops the upload past the limit.
    const chunks = Readable.from(
      (function* () {
        for (let i = 0; i < 5; i++) yield Buffer.alloc(MB)
      })(),
    )
    const chunked = await request(`${s.url}/lb/${ep.id}/count`, {
      method: 'POST',
      body: chunks,
      headers: { authorization: `Bearer ${s.adminKey}`, 'content-type': 'application/octet-stream' },
    })
    expect(chunked.statusCode).toBe(413)
    expect(((await chunked.body.json()) as { detail: string }).detail).toMatch(/larger than/)
  })

  it('answers 504 when the worker takes longer than the request timeout', async () => {
    const res = await lbFetch(s, ep.id, '/slow?ms=4000')
    expect(res.status).toBe(504)
    expect(((await res.json()) as { detail: string }).detail).toMatch(/did not answer within 1500 ms/)
  })

  it('answers 502 when the worker dies mid-request, then serves again from a replacement', async () => {
    const res = await lbFetch(s, ep.id, '/crash')
    expect(res.status).toBe(502)
    expect(res.headers.get('content-type')).toMatch(/problem\+json/)
    const again = await until(
      async () => {
        const r = await lbFetch(s, ep.id, '/whoami')
        return r.status === 200 ? r : undefined
      },
      30_000,
      'a replacement worker',
    )
    expect(again.status).toBe(200)
  })
})

describe('LOAD_BALANCER scaling', () => {
  let s: TestServer
  // The workers' idle time is monotonic and moves only when a test moves it (health checks keep real time).
  const mono = new ManualClock()
  beforeAll(async () => {
    s = await startTestServer(
      {
        jobs: { pingIntervalMs: 500, crashBackoffMs: 100, stopGraceMs: 1_000 },
        loadBalancer: { healthIntervalMs: 100, startingHealthIntervalMs: 30, coldStartTimeoutMs: 20_000 },
      },
      { monotonic: () => mono.now() },
    )
  })
  afterAll(() => s.stop())

  it('runs more than one worker under concurrent load (REQUEST_COUNT 1)', async () => {
    const ep = await createEndpoint(
      s,
      lbBody({
        name: 'rc1',
        scaling: { type: 'REQUEST_COUNT', requestCount: 1 },
        workers: { min: 0, max: 3, idleTimeout: 60 },
      }),
    )
    const answers = await Promise.all(
      [1, 2, 3].map(() => lbFetch(s, ep.id, '/slow?ms=1500').then((r) => r.json() as Promise<{ worker: string }>)),
    )
    expect(new Set(answers.map((a) => a.worker)).size).toBeGreaterThan(1)
  })

  it('drains a worker on scale-down: its request finishes, it takes no new one, then stops', async () => {
    const ep = await createEndpoint(
      s,
      lbBody({
        name: 'drain',
        scaling: { type: 'REQUEST_COUNT', requestCount: 1 },
        workers: { min: 2, max: 2, idleTimeout: 60 },
      }),
    )
    const ready = async () => {
      const list = await s.api('GET', `/v2/serverless/${ep.id}/workers`)
      return list.body.workers.filter((w: { health?: string }) => w.health === 'READY').length === 2
        ? list.body.workers
        : undefined
    }
    await until(ready, 20_000, 'two ready workers')
    const slow = [lbFetch(s, ep.id, '/slow?ms=2500'), lbFetch(s, ep.id, '/slow?ms=2500')]
    await until(
      async () =>
        (await s.api('GET', `/v2/serverless/${ep.id}/workers`)).body.summary.running === 2 ? true : undefined,
      10_000,
      'both busy',
    )
    expect((await s.api('PATCH', `/v2/serverless/${ep.id}`, { workers: { min: 0, max: 1 } })).status).toBe(200)
    const retiring = await until(
      async () =>
        (await s.api('GET', `/v2/serverless/${ep.id}/workers`)).body.workers.find(
          (w: { retiring: boolean }) => w.retiring,
        ),
      10_000,
      'a retiring worker',
    )
    const done = await Promise.all(slow.map(async (p) => (await p).json() as Promise<{ worker: string }>))
    // Both requests finished, the draining worker's included.
    expect(done.map((d) => d.worker)).toContain(retiring.id)
    const after = (await (await lbFetch(s, ep.id, '/whoami')).json()) as { worker: string }
    expect(after.worker).not.toBe(retiring.id)
    await until(
      async () =>
        (await s.api('GET', `/v2/serverless/${ep.id}/workers`)).body.workers.every(
          (w: { id: string }) => w.id !== retiring.id,
        )
          ? true
          : undefined,
      10_000,
      'the drained worker gone',
    )
  })

  it('scales to zero after the idle timeout and back on the next request', async () => {
    const ep = await createEndpoint(s, lbBody({ name: 'zero', workers: { min: 0, max: 1, idleTimeout: 1 } }))
    expect((await lbFetch(s, ep.id, '/whoami')).status).toBe(200)
    const summary = async () => (await s.api('GET', `/v2/serverless/${ep.id}/workers`)).body.summary
    await until(async () => (await summary()).idle === 1, 10_000, 'an idle worker')
    // Idle past its timeout (1 s) since a decision saw it idle, the worker goes.
    await s.hangar.scaler.poke()
    mono.advance(1_100)
    await s.hangar.scaler.poke()
    expect((await summary()).total).toBe(0)
    expect((await lbFetch(s, ep.id, '/whoami')).status).toBe(200)
  })
})

describe('LOAD_BALANCER workers that never become healthy, and host-based addressing', () => {
  let s: TestServer
  beforeAll(async () => {
    s = await startTestServer({
      jobs: { pingIntervalMs: 500, crashBackoffMs: 200 },
      loadBalancer: {
        domain: 'lb.test',
        healthIntervalMs: 100,
        startingHealthIntervalMs: 30,
        coldStartTimeoutMs: 2_500,
        unhealthyAfter: 2,
      },
    })
  })
  afterAll(() => s.stop())

  it('gives a never-healthy worker no traffic: the request ends 503 with Retry-After, the worker is unhealthy', async () => {
    const ep = await createEndpoint(s, lbBody({ name: 'sick', env: { HTTP_HEALTH_STATUS: '500' } }))
    const res = await lbFetch(s, ep.id, '/whoami')
    expect(res.status).toBe(503)
    expect(res.headers.get('x-worker-id')).toBeNull()
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
    const list = await until(
      async () => {
        const l = await s.api('GET', `/v2/serverless/${ep.id}/workers`)
        return l.body.summary.unhealthy > 0 ? l.body : undefined
      },
      10_000,
      'an unhealthy worker',
    )
    expect(list.workers.find((w: { status: string }) => w.status === 'UNHEALTHY').lastError).toMatch(
      /health checks in a row.*HTTP 500/,
    )
  })

  it('serves {endpointId}.{domain} with the path unchanged, and says so in requestUrls', async () => {
    const ep = await createEndpoint(s, lbBody({ name: 'byhost', env: { HTTP_INIT_MS: '0' } }))
    expect(ep.requestUrls.base).toBe(`http://${ep.id}.lb.test`)
    const res = await request(`${s.url}/headers`, {
      headers: { host: `${ep.id}.lb.test`, authorization: `Bearer ${s.adminKey}` },
    })
    expect(res.statusCode).toBe(200)
    const seen = (await res.body.json()) as Record<string, string>
    expect(seen['x-forwarded-host']).toBe(`${ep.id}.lb.test`)
    expect(seen['x-forwarded-prefix']).toBeUndefined()
  })
})
