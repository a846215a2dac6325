/**
 * Sample worker `hangar/http:latest` for LOAD_BALANCER endpoints: an HTTP server on PORT (health checks on
 * PORT_HEALTH + HEALTH_CHECK_PATH, answering 204 while it "loads" for HTTP_INIT_MS, then 200).
 *
 * - `ANY /echo`: the request body back, byte for byte, with its content type
 * - `POST /count`: `{bytes}` of the body, answered once it was read to its end (an upload handler)
 * - `GET /headers`: the request headers as JSON (what reached the worker)
 * - `GET /whoami`: `{worker}` (RUNPOD_POD_ID)
 * - `GET /slow?ms=N`: answers after N ms
 * - `GET /stream?count=N&delayMs=M`: N server-sent events, M ms apart
 * - `GET /crash`: the process exits before answering (a worker dying mid-request)
 * - WebSocket `/ws`: every message echoed back
 *
 * HTTP_HEALTH_STATUS forces the health answer (e.g. 500: a worker that never becomes healthy).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { WebSocketServer } from 'ws'

const env = process.env
const port = Number(env.PORT ?? 80)
const healthPort = Number(env.PORT_HEALTH ?? port)
const healthPath = env.HEALTH_CHECK_PATH ?? '/ping'
const initMs = Number(env.HTTP_INIT_MS ?? 300)
const forcedHealth = env.HTTP_HEALTH_STATUS ? Number(env.HTTP_HEALTH_STATUS) : null
const worker = env.RUNPOD_POD_ID ?? 'local'
const started = Date.now()

function health(res: ServerResponse): void {
  res.statusCode = forcedHealth ?? (Date.now() - started < initMs ? 204 : 200)
  res.end()
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://worker')
  if (url.pathname === healthPath && healthPort === port) return health(res)
  res.setHeader('x-worker-id', worker)
  switch (url.pathname) {
    case '/echo': {
      res.setHeader('content-type', req.headers['content-type'] ?? 'application/octet-stream')
      req.pipe(res)
      return
    }
    case '/count': {
      let bytes = 0
      for await (const chunk of req) bytes += (chunk as Buffer).length
      return json(res, { worker, bytes })
    }
    case '/headers':
      return json(res, req.headers)
    case '/whoami':
      return json(res, { worker })
    case '/slow': {
      const ms = Number(url.searchParams.get('ms') ?? 1000)
      await new Promise((r) => setTimeout(r, ms))
      return json(res, { worker, slept: ms })
    }
    case '/stream': {
      const count = Number(url.searchParams.get('count') ?? 5)
      const delayMs = Number(url.searchParams.get('delayMs') ?? 200)
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
      for (let i = 1; i <= count; i++) {
        if (i > 1) await new Promise((r) => setTimeout(r, delayMs))
        res.write(`data: ${JSON.stringify({ i, at: Date.now() })}\n\n`)
      }
      res.end()
      return
    }
    case '/crash':
      process.exit(1)
  }
  res.statusCode = 404
  json(res, { error: `no route ${url.pathname}` })
}

function json(res: ServerResponse, body: unknown): void {
  res.setHeader('content-type', 'application/json')
  res.end(JSON.stringify(body))
}

// A handler that fails ends its connection: the client sees the request fail, which is what the sample shows.
const server = createServer((req, res) => void handle(req, res).catch(() => res.destroy()))
const wss = new WebSocketServer({ server, path: '/ws' })
wss.on('connection', (ws) => ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary })))
server.listen(port, '127.0.0.1')
if (healthPort !== port)
  createServer((req, res) =>
    new URL(req.url ?? '/', 'http://w').pathname === healthPath ? health(res) : ((res.statusCode = 404), res.end()),
  ).listen(healthPort, '127.0.0.1')
process.once('SIGTERM', () => {
  server.close()
  wss.clients.forEach((c) => c.close(1001))
  setTimeout(() => process.exit(0), 100).unref()
})
