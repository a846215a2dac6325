import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import { Webhook, WebhookVerificationError } from 'standardwebhooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from './helpers/clock.js'
import { createEndpoint, endpointBody, jobCall } from './helpers/endpoints.js'
import { startTestServer, type TestServer } from './helpers/server.js'

/** A receiver keeping each call's raw body and headers, as a verifying receiver needs them. */
class RawReceiver {
  readonly calls: Array<{ body: string; headers: Record<string, string> }> = []
  private waiters: Array<{ n: number; resolve: () => void }> = []
  private server: Server
  url = ''
  constructor() {
    this.server = createServer((req, res) => {
      let body = ''
      req.on('data', (c) => (body += c))
      req.on('end', () => {
        this.calls.push({ body, headers: flat(req.headers) })
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
  /** Resolves with the `n`th call once it arrived. */
  async call(n: number): Promise<{ body: string; headers: Record<string, string> }> {
    if (this.calls.length < n) await new Promise<void>((resolve) => this.waiters.push({ n, resolve }))
    return this.calls[n - 1]
  }
  close(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()))
  }
}

function flat(h: IncomingHttpHeaders): Record<string, string> {
  return Object.fromEntries(Object.entries(h).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')]))
}

/** Whether `secret` verifies the call with the standardwebhooks package (what a receiver runs). */
function verifies(secret: string, call: { body: string; headers: Record<string, string> }): boolean {
  try {
    new Webhook(secret).verify(call.body, call.headers)
    return true
  } catch (err) {
    if (err instanceof WebhookVerificationError) return false
    throw err
  }
}

const OVERLAP_MS = 60_000

describe('signed webhooks', () => {
  let s: TestServer
  let rx: RawReceiver
  const clock = new ManualClock()
  beforeAll(async () => {
    s = await startTestServer(
      { jobs: { pingIntervalMs: 500, webhookRetryDelayMs: 200, webhookSecretOverlapMs: OVERLAP_MS } },
      { clock },
    )
    rx = await new RawReceiver().start()
  })
  afterAll(async () => {
    await rx.close()
    await s.stop()
  })

  it('shows the secret once, at creation, and signs a delivery the standardwebhooks package verifies', async () => {
    const created = await s.api('POST', '/v2/serverless', endpointBody('hangar/echo:latest'))
    expect(created.status).toBe(201)
    const secret = created.body.webhookSecret as string
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
    // Readable once: neither the endpoint nor the list shows it again.
    expect((await s.api('GET', `/v2/serverless/${created.body.id}`)).body).not.toHaveProperty('webhookSecret')
    expect(JSON.stringify((await s.api('GET', '/v2/serverless')).body)).not.toContain(secret.slice(6))

    const job = await jobCall(s, 'POST', `/v2/${created.body.id}/runsync`, { input: { signed: true }, webhook: rx.url })
    expect(job.body.status).toBe('COMPLETED')
    const call = await rx.call(rx.calls.length + 1)
    expect(call.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/)
    expect(new Webhook(secret).verify(call.body, call.headers)).toEqual(job.body)
    // Another endpoint's secret does not verify it.
    const other = await s.api(
      'POST',
      '/v2/serverless',
      endpointBody('hangar/echo:latest', { name: 'other', workers: { min: 0, max: 0 } }),
    )
    expect(verifies(other.body.webhookSecret, call)).toBe(false)

    // The job shows the delivery and its attempt.
    const status = await jobCall(s, 'GET', `/v2/${created.body.id}/status/${job.body.id}`)
    expect(status.body.webhookDeliveries).toEqual([
      {
        id: call.headers['webhook-id'],
        url: rx.url,
        state: 'DELIVERED',
        attempts: [{ at: expect.any(String), statusCode: 200, error: null, durationMs: expect.any(Number) }],
        nextAttemptAt: null,
      },
    ])
  })

  it('signs with both secrets during the overlap of a rotation, and with the new one only after it', async () => {
    const created = await createEndpoint(
      s,
      endpointBody('hangar/echo:latest', { name: 'parked', workers: { min: 0, max: 0 } }),
    )
    const old = created.webhookSecret as string
    const rotated = await s.api('POST', `/v2/serverless/${created.id}/webhook-secret/rotate`)
    expect(rotated.status).toBe(200)
    const fresh = rotated.body.webhookSecret as string
    expect(fresh).not.toBe(old)
    expect(Date.parse(rotated.body.previousSecretExpiresAt)).toBe(clock.now() + OVERLAP_MS)

    // A cancelled job is notified too: no worker needed, and the clock can move freely.
    const notify = async () => {
      const run = await jobCall(s, 'POST', `/v2/${created.id}/run`, { input: {}, webhook: rx.url })
      const n = rx.calls.length + 1
      await jobCall(s, 'POST', `/v2/${created.id}/cancel/${run.body.id}`)
      return rx.call(n)
    }
    const during = await notify()
    expect(during.headers['webhook-signature'].split(' ')).toHaveLength(2)
    expect(verifies(old, during)).toBe(true)
    expect(verifies(fresh, during)).toBe(true)

    clock.advance(OVERLAP_MS)
    const after = await notify()
    expect(after.headers['webhook-signature'].split(' ')).toHaveLength(1)
    expect(verifies(fresh, after)).toBe(true)
    expect(verifies(old, after)).toBe(false)
  })

  it('refuses a rotation of an endpoint the caller does not own, and by a read-only key', async () => {
    const ep = await createEndpoint(
      s,
      endpointBody('hangar/echo:latest', { name: 'mine', workers: { min: 0, max: 0 } }),
    )
    const stranger = await s.accountKey('stranger')
    expect((await s.api('POST', `/v2/serverless/${ep.id}/webhook-secret/rotate`, undefined, stranger)).status).toBe(404)
    const reader = await s.accountKey('stranger', 'READ_ONLY')
    expect((await s.api('POST', `/v2/serverless/${ep.id}/webhook-secret/rotate`, undefined, reader)).status).toBe(403)
  })
})
