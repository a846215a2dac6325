import http from 'node:http'
import https from 'node:https'

/** A URL split once into what a request needs. */
export interface Target {
  secure: boolean
  hostname: string
  port: number
  /** Path with query. */
  path: string
}

/** An answer: status, and the body read (JSON) or dropped. */
export interface Answer {
  status: number
  json(): Promise<unknown>
  drop(): Promise<void>
}

/** Parses a protocol URL once. */
export function target(url: string): Target {
  const u = new URL(url)
  const secure = u.protocol === 'https:'
  return {
    secure,
    hostname: u.hostname.replace(/^\[|\]$/g, ''),
    port: Number(u.port) || (secure ? 443 : 80),
    path: u.pathname + u.search,
  }
}

/** Appends query parameters (the Python SDK appends to the platform's URLs with `&` too). */
export function withQuery(t: Target, params: Record<string, string>): Target {
  let path = t.path
  for (const k in params) path += `${path.includes('?') ? '&' : '?'}${k}=${encodeURIComponent(params[k])}`
  return { ...t, path }
}

/**
 * The worker's HTTP: node:http with keep-alive connections. A worker makes a request or two per job, and
 * fetch() cost about 450 µs of CPU for each (WHATWG streams and headers, an abort timer per call) against
 * about 100 here; undici's own API is cheaper still per call, but loading it adds about 100 ms to every
 * cold start, where node:http is built in (its first request is ready in about 10 ms, fetch's in 50).
 */
export class Transport {
  private readonly agents: { http: http.Agent; https: https.Agent }

  /**
   * `connections` per host: one per job running at once, plus the take, stop and ping calls. `onAnswer` is
   * told of every answer (any status): the platform is there.
   */
  constructor(
    connections: number,
    private readonly onAnswer: () => void = () => {},
  ) {
    const options = { keepAlive: true, maxSockets: connections, maxFreeSockets: connections }
    this.agents = { http: new http.Agent(options), https: new https.Agent(options) }
  }

  /** Closes every connection; requests in flight fail. */
  destroy(): void {
    this.agents.http.destroy()
    this.agents.https.destroy()
  }

  get(t: Target, key: string, timeoutMs: number): Promise<Answer> {
    return this.call(t, 'GET', key, undefined, timeoutMs)
  }

  post(t: Target, key: string, body: unknown, timeoutMs: number): Promise<Answer> {
    return this.call(t, 'POST', key, JSON.stringify(body), timeoutMs)
  }

  /** Posts JSON text already written (a result measured before it is sent). */
  postText(t: Target, key: string, json: string, timeoutMs: number): Promise<Answer> {
    return this.call(t, 'POST', key, json, timeoutMs)
  }

  private call(
    t: Target,
    method: 'GET' | 'POST',
    key: string,
    body: string | undefined,
    timeoutMs: number,
  ): Promise<Answer> {
    const headers: http.OutgoingHttpHeaders =
      body === undefined
        ? { authorization: key }
        : { authorization: key, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }
    const request = t.secure ? https.request : http.request
    return new Promise<Answer>((resolve, reject) => {
      const req = request(
        {
          hostname: t.hostname,
          port: t.port,
          path: t.path,
          method,
          headers,
          agent: t.secure ? this.agents.https : this.agents.http,
        },
        (res) => {
          this.onAnswer()
          resolve({ status: res.statusCode ?? 0, json: () => readJson(res), drop: () => drain(res) })
        },
      )
      // Inactivity on the connection, the whole exchange included (a long-poll answers within the server's hold time).
      req.setTimeout(timeoutMs, () =>
        req.destroy(new Error(`${method} ${t.path.split('?')[0]} timed out after ${timeoutMs} ms`)),
      )
      req.once('error', reject)
      req.end(body)
    })
  }
}

function readJson(res: http.IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    res.on('data', (c: Buffer) => chunks.push(c))
    res.once('error', reject)
    res.once('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')))
      } catch (err) {
        reject(err)
      }
    })
  })
}

/** Reads the body to its end, so the connection goes back to the pool. */
function drain(res: http.IncomingMessage): Promise<void> {
  return new Promise((resolve) => {
    if (res.readableEnded) return resolve()
    res.once('end', resolve)
    res.once('close', resolve)
    res.once('error', () => resolve())
    res.resume()
  })
}
