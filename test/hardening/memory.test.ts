import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createEndpoint, endpointBody, waitFinal } from '../helpers/endpoints.js'
import { openSocket, readAnswer, type RawAnswer } from '../helpers/raw.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

const MiB = 1024 * 1024

/** Sends the start of a request and reads the answer the server gives before the body has come. */
async function rawAnswerTo(url: string, start: string): Promise<RawAnswer> {
  const socket = await openSocket(url)
  const answer = readAnswer(socket)
  socket.write(start)
  const a = await answer
  socket.destroy()
  return a!
}

describe('big bodies: raw input, bounded bytes in flight', () => {
  let s: TestServer
  beforeAll(async () => {
    s = await startTestServer({
      limits: { bodyBytesInFlight: 64 * MiB },
      images: {
        'test/raw-echo:latest': {
          command: [process.execPath, join(import.meta.dirname, '..', 'fixtures', 'raw-echo.mjs')],
        },
      },
    })
  })
  afterAll(() => s.stop())

  it('hands a job input to the worker byte for byte, never parsed and written again', async () => {
    const ep = await createEndpoint(
      s,
      endpointBody('test/raw-echo:latest', { workers: { min: 0, max: 1, idleTimeout: 60 } }),
    )
    // Written again by JSON, 9007199254740993 would become ...992, 1.50 would become 1.5 and the spacing would go.
    const input = '{ "big": 9007199254740993, "f": 1.50, "s": "\\u00e9\u00e9", "nested": {"a": [1, 2.0e3]} }'
    const res = await fetch(`${s.url}/v2/${ep.id}/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.adminKey}`, 'content-type': 'application/json' },
      body: `{"input": ${input}, "policy": {"ttl": 60000}}`,
    })
    expect(res.status).toBe(200)
    const { id } = (await res.json()) as { id: string }
    const final = await waitFinal(s, ep.id, id, 30_000)
    expect(final.status).toBe('COMPLETED')
    const taken = JSON.parse(final.output as string) as Record<string, unknown>
    expect(final.output).toContain(`"input":${input}`)
    expect(taken).toMatchObject({ id, policy: { ttl: 60000 } })
  })

  it('hands a large /runsync input over byte for byte (stored and taken as its bytes) and its result back', async () => {
    const ep = await createEndpoint(
      s,
      endpointBody('test/raw-echo:latest', { name: 'large', workers: { min: 0, max: 1, idleTimeout: 60 } }),
    )
    // 6 MiB of UTF-8, past the size a take returns inline: read alone from the store and streamed out as a buffer.
    const input = `{"big": 9007199254740993, "text": "${'é€x'.repeat(MiB)}" }`
    const res = await fetch(`${s.url}/v2/${ep.id}/runsync?wait=60000`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.adminKey}`, 'content-type': 'application/json' },
      body: `{"input": ${input}}`,
    })
    expect(res.status).toBe(200)
    const final = (await res.json()) as { id: string; status: string; output: string }
    expect(final.status).toBe('COMPLETED')
    expect(final.output).toBe(`{"id":"${final.id}","input":${input}}`)
  })

  it('answers 503 with Retry-After once the request bodies held would pass the configured cap', async () => {
    const ep = await createEndpoint(
      s,
      endpointBody('hangar/echo:latest', { name: 'budget', workers: { min: 0, max: 0, idleTimeout: 60 } }),
    )
    const head = (bytes: number) =>
      `POST /v2/${ep.id}/runsync HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.adminKey}\r\nContent-Type: application/json\r\nContent-Length: ${bytes}\r\n\r\n{"input":`
    // Three clients announce 19 MiB bodies and send them slowly: 57 of the 64 MiB are held.
    const slow = await Promise.all([1, 2, 3].map(() => openSocket(s.url)))
    for (const socket of slow) socket.write(head(19 * MiB))
    await new Promise((r) => setTimeout(r, 300))
    const fourth = await openSocket(s.url)
    const answer = readAnswer(fourth)
    fourth.write(head(19 * MiB))
    const a = (await answer)!
    expect(a.status).toBe(503)
    expect(a.headers['content-type']).toMatch(/^application\/problem\+json/)
    expect(a.headers['retry-after']).toBe('2')
    expect(JSON.parse(a.body).detail).toMatch(/64 MiB limit/)
    fourth.destroy()
    // A body over /runsync's own 20 MB limit could never be taken: 413 at once, full budget or not.
    const over = await openSocket(s.url)
    const overAnswer = readAnswer(over)
    over.write(head(21 * MiB))
    const o = (await overAnswer)!
    over.destroy()
    expect(o.status).toBe(413)
    expect(JSON.parse(o.body).detail).toBe(
      `request body of ${21 * MiB} bytes is larger than the ${20 * 1024 * 1024}-byte limit of POST /v2/:endpointId/runsync`,
    )
    // Small requests still fit; once the slow clients go, their budget is free again.
    expect((await s.api('POST', `/v2/${ep.id}/run`, { input: { small: true } })).status).toBe(200)
    for (const socket of slow) socket.destroy()
    const deadline = Date.now() + 10_000
    let status = 0
    while (Date.now() < deadline) {
      const big = await fetch(`${s.url}/v2/${ep.id}/run`, {
        method: 'POST',
        headers: { authorization: `Bearer ${s.adminKey}`, 'content-type': 'application/json' },
        body: `{"input":{"d":"${'x'.repeat(9 * MiB)}"}}`,
      })
      status = big.status
      await big.body?.cancel()
      if (status === 200) break
      await new Promise((r) => setTimeout(r, 100))
    }
    expect(status).toBe(200)
  })

  it('answers 413 at once to a body larger than the cap itself: no retry could help', async () => {
    const ep = await createEndpoint(
      s,
      endpointBody('hangar/echo:latest', { name: 'never', workers: { min: 0, max: 0, idleTimeout: 60 } }),
    )
    const socket = await openSocket(s.url)
    const answer = readAnswer(socket)
    socket.write(
      `POST /v2/${ep.id}/runsync HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.adminKey}\r\nContent-Type: application/json\r\nContent-Length: ${600 * MiB}\r\n\r\n{"input":`,
    )
    const a = (await answer)!
    socket.destroy()
    expect(a.status).toBe(413)
    expect(a.headers['content-type']).toMatch(/^application\/problem\+json/)
    expect(a.headers['retry-after']).toBeUndefined()
    expect(JSON.parse(a.body).detail).toBe(
      `request body of ${600 * MiB} bytes is larger than the ${20 * 1024 * 1024}-byte limit of POST /v2/:endpointId/runsync`,
    )
    // A route without a limit of its own is bounded by the cap.
    const b = await rawAnswerTo(
      s.url,
      `POST /v2/templates HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.adminKey}\r\nContent-Type: application/json\r\nContent-Length: ${600 * MiB}\r\n\r\n{"name":`,
    )
    expect(b.status).toBe(413)
    expect(b.headers['retry-after']).toBeUndefined()
    expect(JSON.parse(b.body).detail).toBe(
      `request body of ${600 * MiB} bytes is larger than the ${64 * MiB}-byte (64 MiB) limit of request bodies the server holds at once`,
    )
  })
})
