import { permissionOf } from './routePermissions.js'
import type { IncomingMessage, Server } from 'node:http'
import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import { WebSocket, WebSocketServer, type RawData } from 'ws'
import { lbHostEndpoint } from '../domain/endpoints/endpoint.js'
import { DomainError } from '../domain/errors.js'
import { endToEnd, type Headers } from '../domain/hopByHop.js'
import type { AccountService } from '../services/accounts/AccountService.js'
import type { EndpointService } from '../services/endpoints/EndpointService.js'
import type { LoadBalancer } from '../services/loadBalancer/LoadBalancer.js'
import { bearer } from './auth.js'
import { rawProblem } from './problem.js'
import { FORWARDED_BY, type LeaderView } from './leaderForwarding.js'

export interface LbUpgradeDeps {
  accounts: Pick<AccountService, 'authenticate'>
  endpoints: Pick<EndpointService, 'loadBalancer'>
  balancer: Pick<LoadBalancer, 'acquire'>
  /** Host-based addressing (`{id}.{domain}`), when configured. */
  domain?: string
  /** Several replicas: a follower hands upgrades to the leader, which alone knows the workers' addresses. */
  replicas?: { leadership: LeaderView; self: () => string }
}

/** Handshake fields ws sets itself on the upstream connection; the rest of the client's headers go through. */
const HANDSHAKE = [
  'host',
  'sec-websocket-key',
  'sec-websocket-version',
  'sec-websocket-extensions',
  'sec-websocket-protocol',
  'authorization',
]

/**
 * WebSocket upgrades to LOAD_BALANCER endpoints (`/lb/{id}/...` or host `{id}.{domain}`): authenticated
 * like HTTP traffic, given a worker by the balancer (the connection holds its slot until it closes), then
 * bridged message by message between the client and the worker with the `ws` library, close codes and
 * subprotocol passed along. Upgrades to other paths are left to other listeners. A follower replica bridges
 * the client to the leader instead, with the client's Authorization and Host (the leader authenticates and
 * picks the worker), the way leaderForwarding hands on HTTP requests.
 */
export function registerLbUpgrades(server: Server, deps: LbUpgradeDeps): void {
  const protocolOf = new WeakMap<IncomingMessage, string>()
  const wss = new WebSocketServer({ noServer: true, handleProtocols: (_offered, req) => protocolOf.get(req) || false })
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const target = lbTarget(req, deps.domain)
    if (!target) {
      if (server.listenerCount('upgrade') === 1) socket.destroy()
      return
    }
    void upgrade(req, socket, head, target).catch((err) => refuse(socket, err))
  })

  async function upgrade(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    target: { endpointId: string; path: string },
  ): Promise<void> {
    const replicas = deps.replicas
    if (replicas && !replicas.leadership.isLeader) return toLeader(req, socket, head, replicas)
    const principal = await deps.accounts.authenticate(bearer(req.headers.authorization, false))
    // A member needs what the route table asks of load-balancer traffic, on upgrades as on requests.
    const needed = permissionOf('GET', '/lb/:endpointId/*')
    if (principal.member && needed && !principal.member.grants.has(needed))
      throw new DomainError(
        'forbidden',
        `load-balancer traffic needs the ${needed} permission, which role ${principal.member.role} does not hold`,
      )
    if (principal.permission === 'RESTRICTED' && !principal.endpointIds.includes(target.endpointId)) {
      throw new DomainError(
        'forbidden',
        `this key is restricted to endpoints ${principal.endpointIds.join(', ')}, not ${JSON.stringify(target.endpointId)}`,
      )
    }
    const ep = await deps.endpoints.loadBalancer(principal, target.endpointId)
    const gone = new AbortController()
    socket.once('close', () => gone.abort())
    const lease = await deps.balancer.acquire(
      ep.id,
      ep.scaling.type === 'REQUEST_COUNT' ? ep.scaling.requestCount : 1,
      gone.signal,
    )
    const offered = String(req.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean)
    const headers = endToEnd(req.headers as Headers, [...HANDSHAKE, FORWARDED_BY]) as Record<string, string>
    const upstream = new WebSocket(`ws://${lease.address.host}:${lease.address.port}${target.path}`, offered, {
      headers,
      perMessageDeflate: false,
    })
    connect(req, socket, head, upstream, lease.release, {
      refused: (res, done) => {
        refuse(
          socket,
          new DomainError(
            'bad_gateway',
            `worker ${lease.workerId} refused the WebSocket upgrade with HTTP ${res.statusCode}`,
          ),
        )
        res.resume()
        done()
      },
      unreachable: (err) =>
        refuse(
          socket,
          new DomainError(
            'bad_gateway',
            `worker ${lease.workerId} could not be reached for the WebSocket: ${err.message}`,
          ),
        ),
    })
  }

  /** A follower's upgrade: the same handshake, to the leader; the leader's refusal is passed on as it came. */
  function toLeader(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    replicas: NonNullable<LbUpgradeDeps['replicas']>,
  ): void {
    const retry = { 'retry-after': '1' }
    const sender = req.headers[FORWARDED_BY]
    if (sender !== undefined)
      throw new DomainError(
        'unavailable',
        `${String(sender)} forwarded this upgrade to the leader, but this replica does not lead (leadership is moving); retry`,
        undefined,
        retry,
      )
    const leader = replicas.leadership.leaderUrl
    if (!leader)
      throw new DomainError(
        'unavailable',
        'this replica does not lead and no leader is known right now (one is being elected); retry',
        undefined,
        retry,
      )
    const offered = String(req.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean)
    const headers: Record<string, string> = {
      ...(endToEnd(req.headers as Headers, HANDSHAKE) as Record<string, string>),
      [FORWARDED_BY]: replicas.self(),
    }
    if (req.headers.authorization) headers.authorization = req.headers.authorization
    if (req.headers.host) headers.host = req.headers.host
    const upstream = new WebSocket(`${leader.replace(/^http/, 'ws')}${req.url ?? '/'}`, offered, {
      headers,
      perMessageDeflate: false,
    })
    connect(req, socket, head, upstream, () => {}, {
      refused: (res, done) => relay(socket, res, done),
      unreachable: (err) =>
        refuse(
          socket,
          new DomainError(
            'unavailable',
            `the leader at ${leader} could not be reached for the WebSocket: ${err.message}; retry`,
            undefined,
            retry,
          ),
        ),
    })
  }

  /** Completes the client's handshake once `upstream` opens, then bridges the two; `release` once both closed or it failed. */
  /**
   * Completes the client's handshake once `upstream` opens, then bridges the two; `release` once both closed or
   * the upstream failed. Only the first failure answers the client (terminating a refused handshake errors too).
   */
  function connect(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    upstream: WebSocket,
    release: () => void,
    fail: { refused: (res: IncomingMessage, done: () => void) => void; unreachable: (err: Error) => void },
  ): void {
    let failed = false
    upstream.once('open', () => {
      if (upstream.protocol) protocolOf.set(req, upstream.protocol)
      wss.handleUpgrade(req, socket, head, (client) => bridge(client, upstream, release))
    })
    upstream.once('unexpected-response', (_r, res) => {
      failed = true
      release()
      fail.refused(res, () => upstream.terminate())
    })
    upstream.on('error', (err) => {
      if (upstream.readyState === WebSocket.OPEN || failed) return
      failed = true
      release()
      fail.unreachable(err)
    })
  }
}

/** Passes an upstream's refusal of the upgrade (status, headers, body) on to the client's socket, then `done`. */
function relay(socket: Duplex, res: IncomingMessage, done: () => void): void {
  const chunks: Buffer[] = []
  res.on('data', (c: Buffer) => chunks.push(c))
  res.once('end', () => {
    if (!socket.writable) return done()
    const body = Buffer.concat(chunks)
    const keep = endToEnd(res.headers as Headers, ['content-length', 'transfer-encoding'])
    const lines = Object.entries(keep).flatMap(([k, v]) => [v ?? []].flat().map((x) => `${k}: ${x}\r\n`))
    const status = res.statusCode ?? 502
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n${lines.join('')}content-length: ${body.length}\r\nconnection: close\r\n\r\n`,
    )
    socket.end(body)
    done()
  })
  res.once('error', () => {
    socket.destroy()
    done()
  })
}

function bridge(client: WebSocket, upstream: WebSocket, release: () => void): void {
  const forward = (to: WebSocket) => (data: RawData, isBinary: boolean) => {
    if (to.readyState === WebSocket.OPEN) to.send(data, { binary: isBinary })
  }
  client.on('message', forward(upstream))
  upstream.on('message', forward(client))
  let closed = 0
  const onClose = (other: WebSocket) => (code: number, reason: Buffer) => {
    // 1005/1006 (no code, abnormal) may not be sent: the other side gets a normal close.
    if (other.readyState === WebSocket.OPEN) other.close(code === 1005 || code === 1006 ? 1000 : code, reason)
    if (++closed === 2) release()
  }
  client.once('close', onClose(upstream))
  upstream.once('close', onClose(client))
  client.on('error', () => upstream.terminate())
  upstream.on('error', () => client.terminate())
}

/** The endpoint and worker path an upgrade request addresses, or null when it is not load-balancer traffic. */
function lbTarget(req: IncomingMessage, domain: string | undefined): { endpointId: string; path: string } | null {
  const url = req.url ?? '/'
  const byHost = domain ? lbHostEndpoint(req.headers.host, domain) : null
  if (byHost) return { endpointId: byHost, path: url }
  const m = /^\/lb\/([a-z0-9][a-z0-9-]*)(\/[\s\S]*|\?[\s\S]*)?$/.exec(url)
  if (!m) return null
  const rest = m[2] ?? '/'
  return { endpointId: m[1], path: rest.startsWith('/') ? rest : `/${rest}` }
}

const STATUS: Partial<Record<DomainError['kind'], number>> = {
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  bad_request: 400,
  unavailable: 503,
  bad_gateway: 502,
  too_many_requests: 429,
}

/** Answers a refused upgrade with a problem, on the raw socket (no HTTP response object exists for it). */
function refuse(socket: Duplex, err: unknown): void {
  if (!socket.writable) return
  const status = err instanceof DomainError ? (STATUS[err.kind] ?? 500) : 500
  const detail = err instanceof DomainError ? err.detail : 'internal error'
  socket.end(rawProblem(status, detail, err instanceof DomainError ? err.headers : undefined))
}
