import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from './helpers/server.js'

/** The probes of deploy/kubernetes (readiness and liveness): public, and /readyz says whether this process leads. */
describe('GET /livez and /readyz', () => {
  let s: TestServer
  beforeAll(async () => {
    s = await startTestServer()
  })
  afterAll(async () => {
    await s.stop()
  })

  it('answer without a key; a process on its own is "single"', async () => {
    const live = await fetch(`${s.url}/livez`)
    expect(live.status).toBe(200)
    expect(await live.json()).toEqual({ status: 'ok' })
    const ready = await fetch(`${s.url}/readyz`)
    expect(ready.status).toBe(200)
    expect(await ready.json()).toEqual({ status: 'ready', role: 'single' })
  })
})
