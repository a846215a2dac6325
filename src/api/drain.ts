import type { Server } from 'node:http'
import type { Socket } from 'node:net'

/**
 * Counts requests per connection so shutdown can close every connection that is not serving one.
 * Node's own closeIdleConnections() misses two kinds: a keep-alive connection whose request finishes
 * after closing began, and a connection a client opened but never sent a request on (Node counts that as
 * active and keeps it until headersTimeout, about a minute).
 */
export interface TrackedConnections {
  closeUnused(): void
  tracked(): number
  /**
   * Begins draining: every response from now on closes its connection when it ends (`Connection: close`), so
   * clients open new ones, which an orchestrator sends to another replica once it has taken this one out. A
   * connection is never closed under a client that may be sending on it: the client closes it.
   */
  drain(): void
  readonly draining: boolean
}

export function trackConnections(server: Server): TrackedConnections {
  const inFlight = new Map<Socket, number>()
  let draining = false
  server.on('connection', (socket: Socket) => {
    inFlight.set(socket, 0)
    socket.once('close', () => inFlight.delete(socket))
  })
  // Before the app's own listener, so the header is set before any answer is written.
  server.prependListener('request', (req, res) => {
    const socket = req.socket
    if (draining && !res.headersSent) res.setHeader('connection', 'close')
    inFlight.set(socket, (inFlight.get(socket) ?? 0) + 1)
    res.once('close', () => {
      // A connection that closed under its response (a client leaving a log stream) closes first and is gone
      // from the map: putting it back would keep it, with its request and response, for good.
      const n = inFlight.get(socket)
      if (n !== undefined) inFlight.set(socket, Math.max(0, n - 1))
    })
  })
  return {
    closeUnused() {
      for (const [socket, n] of inFlight) if (n === 0) socket.destroy()
    },
    /** Connections counted now: open ones only. */
    tracked() {
      return inFlight.size
    },
    drain() {
      draining = true
    },
    get draining() {
      return draining
    },
  }
}
