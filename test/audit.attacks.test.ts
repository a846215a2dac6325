import { request } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createPod, podBody, terminateAll, waitPod } from './helpers/pods.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

/** The audit log tried as a tenant would to keep a change out of it. */
describe('audit log: changes a client hangs up on', () => {
  let s: TestServer
  let key: string
  beforeAll(async () => {
    s = await startTestServer()
    key = await s.accountKey('audit-hangup')
  })
  afterAll(async () => {
    await terminateAll(s, key)
    await s?.stop()
  })

  /** Sends `method path` and hangs up at once, before any answer. */
  const hangUp = (method: string, path: string) =>
    new Promise<void>((resolve) => {
      const u = new URL(`${s.url}${path}`)
      const r = request({
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method,
        headers: { authorization: `Bearer ${key}` },
      })
      r.on('error', () => resolve())
      r.end(() => setTimeout(() => (r.destroy(), resolve()), 5))
    })

  it('records a pod deleted by a request whose client left before the answer', async () => {
    const pod = await createPod(s, podBody({ name: 'hangup' }), key)
    await waitPod(s, pod.id, 'RUNNING', key)
    await hangUp('DELETE', `/v2/pods/${pod.id}`)
    await until(
      async () => (await s.api('GET', `/v2/pods/${pod.id}`, undefined, key)).status === 404 || undefined,
      10_000,
      'the pod deleted',
    )
    const entries = await until(
      async () => {
        const e = (await s.api('GET', '/v2/audit', undefined, key)).body.entries as { action: string }[]
        return e.some((x) => x.action === 'pod.delete') ? e : undefined
      },
      5_000,
      'the delete in the audit log',
    )
    expect(entries.find((e: any) => e.action === 'pod.delete')).toMatchObject({
      resourceId: pod.id,
      outcome: 'success',
      status: 204,
    })
  })

  it("keeps a client's request id when it is short and plain, and drops one of 8 KB", async () => {
    const send = (requestId: string, name: string) =>
      fetch(`${s.url}/v2/secrets`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-request-id': requestId },
        body: JSON.stringify({ name, value: 'v' }),
      }).then((r) => r.status)
    expect(await send('ci-run-42', 'plain')).toBe(201)
    expect(await send('X'.repeat(8000), 'bloated')).toBe(201)
    const entries = await until(
      async () => {
        const e = (await s.api('GET', '/v2/audit?action=secret.create', undefined, key)).body.entries as any[]
        return e.length === 2 ? e : undefined
      },
      5_000,
      'both creates in the log',
    )
    expect(entries.map((e) => e.requestId).sort()).toEqual(['ci-run-42', null].sort())
  })
})
