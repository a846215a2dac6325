import { describe, expect, it } from 'vitest'
import { openSocket, rawRequest, readAnswer } from './helpers/raw.js'
import { startTestServer } from './helpers/server.js'

const LIVEZ = 'GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'

/**
 * Stopping behind a load balancer (a Kubernetes Service): a client, such as a Python worker posting its job's result,
 * may send on a keep-alive connection it opened before the stop began. With `drainMs` the replica answers it (and
 * closes the connection after that answer) instead of closing the connection under the client, which aiohttp
 * reports as "Server disconnected" and the runpod SDK as a result it failed to return.
 */
describe('a stopping control plane drains for drainMs', () => {
  /** A kept-alive connection that served one request, then the stop begun, then a second request on it. */
  async function secondRequestDuringStop(drainMs: number) {
    const s = await startTestServer({ drainMs })
    const socket = await openSocket(s.url)
    const first = readAnswer(socket)
    socket.write(LIVEZ)
    expect((await first)?.status).toBe(200)
    const stopped = s.stop()
    await new Promise((r) => setTimeout(r, 300))
    // A socket the server closed: the client's next request on it gets no answer.
    const second = socket.destroyed || socket.readableEnded ? null : readAnswer(socket, 5_000)
    if (second) socket.write(LIVEZ)
    const answer = await second
    const readyz = drainMs > 0 ? await rawRequest(s.url, 'GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n') : null
    await stopped
    socket.destroy()
    return { answer, readyz }
  }

  it('answers a request on an open connection, asking the client to close it, and says draining on /readyz', async () => {
    const { answer, readyz } = await secondRequestDuringStop(2_000)
    expect(answer?.status).toBe(200)
    expect(answer?.headers.connection).toBe('close')
    expect(readyz?.status).toBe(503)
    expect(JSON.parse(readyz!.body)).toEqual({ status: 'draining', role: 'single' })
  })

  it('without it (drainMs 0, the default) the connection is closed under the client', async () => {
    const { answer } = await secondRequestDuringStop(0)
    expect(answer).toBeNull()
  })
})
