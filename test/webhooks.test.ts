import { createServer, type IncomingMessage, type Server } from 'node:http'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createEndpoint, endpointBody, jobCall } from './helpers/endpoints.js'
import { startTestServer, type TestServer } from './helpers/server.js'

/** A local webhook receiver answering each call with the next status of `answers` (the last one repeats). */
class Receiver {
  readonly calls: Array<{ at: number; body: any; headers: IncomingMessage['headers'] }> = []
  private waiters: Array<{ n: number; resolve: () => void }> = []
  private server: Server
  url = ''
  constructor(public answers: number[]) {
    this.server = createServer((req, res) => {
      let text = ''
      req.on('data', (c) => (text += c))
      req.on('end', () => {
        this.calls.push({ at: Date.now(), body: JSON.parse(text), headers: req.headers })
        res.statusCode = this.answers[Math.min(this.calls.length - 1, this.answers.length - 1)]
        res.end()
        for (const w of this.waiters.filter((w) => this.calls.length >= w.n)) w.resolve()
      })
    })
  }
  async start(): Promise<this> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r))
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}/hook`
    return this
  }
  /** Resolves once `n` calls arrived. */
  received(n: number): Promise<void> {
    if (this.calls.length >= n) return Promise.resolve()
    return new Promise((resolve) => this.waiters.push({ n, resolve }))
  }
  close(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()))
  }
}

describe('webhooks', () => {
  let s: TestServer
  let echo: string
  let parked: string
  beforeAll(async () => {
    s = await startTestServer({ jobs: { pingIntervalMs: 500, webhookRetryDelayMs: 200 } })
    echo = (await createEndpoint(s, endpointBody('hangar/echo:latest'))).id
    parked = (
      await createEndpoint(s, endpointBody('hangar/echo:latest', { name: 'parked', workers: { min: 0, max: 0 } }))
    ).id
  })
  afterAll(() => s.stop())

  it('POSTs the status object on completion, retrying a failing receiver twice, recording each attempt', async () => {
    const rx = await new Receiver([500, 503, 200]).start()
    try {
      const r = await jobCall(s, 'POST', `/v2/${echo}/runsync`, { input: { v: 1 }, webhook: rx.url })
      expect(r.body.status).toBe('COMPLETED')
      await rx.received(3)
      for (const c of rx.calls) expect(c.body).toEqual(r.body)
      expect(rx.calls[0].headers['content-type']).toBe('application/json')
      expect(rx.calls[1].at - rx.calls[0].at).toBeGreaterThanOrEqual(190)
      expect(rx.calls[2].at - rx.calls[1].at).toBeGreaterThanOrEqual(190)
      const [delivery] = await waitDelivery(s, r.body.id, 'DELIVERED')
      expect(delivery.attempts.map((a) => [a.statusCode, a.error])).toEqual([
        [500, 'answered HTTP 500'],
        [503, 'answered HTTP 503'],
        [200, null],
      ])
    } finally {
      await rx.close()
    }
  })

  it('gives up after three attempts', async () => {
    const rx = await new Receiver([500]).start()
    try {
      const r = await jobCall(s, 'POST', `/v2/${echo}/runsync`, { input: {}, webhook: rx.url })
      await rx.received(3)
      const [delivery] = await waitDelivery(s, r.body.id, 'FAILED')
      expect(delivery.attempts).toHaveLength(3)
      expect(rx.calls).toHaveLength(3)
    } finally {
      await rx.close()
    }
  })

  it('notifies a cancellation too, and a receiver that never answers blocks nothing', async () => {
    const hang = createServer(() => {})
    await new Promise<void>((r) => hang.listen(0, '127.0.0.1', r))
    const hangUrl = `http://127.0.0.1:${(hang.address() as { port: number }).port}/`
    const rx = await new Receiver([200]).start()
    try {
      const stuck = await jobCall(s, 'POST', `/v2/${echo}/runsync`, { input: {}, webhook: hangUrl })
      expect(stuck.body.status).toBe('COMPLETED')
      const run = await jobCall(s, 'POST', `/v2/${parked}/run`, { input: {}, webhook: rx.url })
      const started = Date.now()
      expect((await jobCall(s, 'POST', `/v2/${parked}/cancel/${run.body.id}`)).body.status).toBe('CANCELLED')
      expect(Date.now() - started).toBeLessThan(1_000)
      await rx.received(1)
      expect(rx.calls[0].body).toEqual({ id: run.body.id, status: 'CANCELLED' })
    } finally {
      hang.closeAllConnections()
      hang.close()
      await rx.close()
    }
  })
})

describe('webhook deliveries survive a restart', () => {
  it('resumes a pending delivery on the next start', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'hangar-webhook-'))
    const rx = await new Receiver([500, 200]).start()
    try {
      const a = await startTestServer({ jobs: { pingIntervalMs: 500, webhookRetryDelayMs: 300 } }, { dataDir })
      const ep = (await createEndpoint(a, endpointBody('hangar/echo:latest'))).id
      const r = await jobCall(a, 'POST', `/v2/${ep}/runsync`, { input: {}, webhook: rx.url })
      await rx.received(1)
      await waitAttempts(a, r.body.id, 1)
      await a.stop()
      const b = await startTestServer({ jobs: { pingIntervalMs: 500, webhookRetryDelayMs: 300 } }, { dataDir })
      try {
        await rx.received(2)
        const [delivery] = await waitDelivery(b, r.body.id, 'DELIVERED')
        expect(delivery.attempts.map((x) => x.statusCode)).toEqual([500, 200])
      } finally {
        await b.stop()
      }
    } finally {
      await rx.close()
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

async function waitDelivery(s: TestServer, jobId: string, state: string) {
  const until = Date.now() + 10_000
  for (;;) {
    const list = await s.hangar.store.webhooks.listForJob(jobId)
    if (list[0]?.state === state || Date.now() > until) return list
    await new Promise((r) => setTimeout(r, 20))
  }
}

async function waitAttempts(s: TestServer, jobId: string, n: number) {
  const until = Date.now() + 10_000
  while (((await s.hangar.store.webhooks.listForJob(jobId))[0]?.attempts.length ?? 0) < n && Date.now() < until)
    await new Promise((r) => setTimeout(r, 20))
}
