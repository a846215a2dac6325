import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { KubeConfig } from '@kubernetes/client-node'
import { request } from 'undici'
import { type KubeHttp, kubeHttp } from './kubeHttp.js'

/** A list that reads the whole cluster (the capacity refresh): how long it took and how much it read. */
export interface ListTiming {
  key: string
  ms: number
  bytes: number
}

/**
 * A counting proxy in front of the API server, for one client (Hangar): its kubeconfig points here (plain HTTP
 * on 127.0.0.1), and every request is counted by verb and resource (`POST pods`, `GET pods (watch)`) before it
 * goes on to the API server. The API server's own `apiserver_request_total` has no label that tells Hangar
 * apart from the scheduler, the controllers and the fake Nodes' controller, which all use the admin identity
 * here. The Pod watch stream is read on its way through, so the moment Hangar is handed a Pod's Running
 * event is known (watch lag).
 */
export class KubeApiProxy {
  readonly counts = new Map<string, number>()
  /** Pod name -> performance.now() when the first event showing it Running went to the client. */
  readonly runningSeen = new Map<string, number>()
  readonly lists: ListTiming[] = []
  private since = performance.now()

  private constructor(
    private readonly server: Server,
    private readonly k: KubeHttp,
    /** A kubeconfig file naming this proxy, with the original's token. */
    readonly kubeconfig: string,
    private readonly dir: string,
  ) {}

  static async start(kc: KubeConfig): Promise<KubeApiProxy> {
    const k = await kubeHttp(kc, 64)
    let proxy!: KubeApiProxy
    const server = createServer((req, res) => void proxy.forward(req, res))
    // Longer than a client's idle sockets live: with Node's 5 s, a socket the client reused as the proxy closed
    // it failed with ECONNRESET (a Pod's DELETE, in a 2,000-Pod run).
    server.keepAliveTimeout = 600_000
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    const port = (server.address() as AddressInfo).port
    const dir = mkdtempSync(join(tmpdir(), 'hangar-kproxy-'))
    const file = join(dir, 'kubeconfig')
    const token = (k.headers.Authorization ?? k.headers.authorization ?? '').replace(/^Bearer /, '')
    writeFileSync(
      file,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          { name: 'proxy', cluster: { server: `http://127.0.0.1:${port}`, 'insecure-skip-tls-verify': true } },
        ],
        users: [{ name: 'proxy', user: { token } }],
        contexts: [{ name: 'proxy', context: { cluster: 'proxy', user: 'proxy' } }],
        'current-context': 'proxy',
      }),
    )
    proxy = new KubeApiProxy(server, k, file, dir)
    return proxy
  }

  /** Requests since the last reset, and their rate. */
  totals(): { requests: number; perS: number; seconds: number } {
    const requests = [...this.counts.values()].reduce((a, b) => a + b, 0)
    const seconds = (performance.now() - this.since) / 1000
    return { requests, perS: requests / seconds, seconds }
  }

  reset(): void {
    this.counts.clear()
    this.lists.length = 0
    this.since = performance.now()
  }

  private async forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const t0 = performance.now()
    const key = keyOf(req.method ?? 'GET', req.url ?? '/')
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1)
    const abort = new AbortController()
    res.on('close', () => abort.abort())
    try {
      const headers: Record<string, string> = {}
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string' && !HOP.has(k)) headers[k] = v
      const hasBody = req.method !== 'GET' && req.method !== 'HEAD' && req.method !== 'DELETE'
      const body = hasBody || req.headers['content-length'] ? req : undefined
      const up = await request(`${this.k.base}${req.url}`, {
        method: req.method as 'GET',
        headers,
        body,
        dispatcher: this.k.dispatcher,
        signal: abort.signal,
      })
      const out: Record<string, string | string[]> = {}
      for (const [k, v] of Object.entries(up.headers)) if (v !== undefined && !HOP.has(k)) out[k] = v
      res.writeHead(up.statusCode, out)
      // A compressed stream is passed on unread (the API server compresses large lists, not watches).
      const watchingPods = key === 'GET pods (watch)' && !up.headers['content-encoding']
      let rest = ''
      let bytes = 0
      for await (const chunk of up.body) {
        bytes += chunk.length
        if (watchingPods) rest = this.seeEvents(rest + chunk.toString())
        res.write(chunk)
      }
      res.end()
      if (key === 'GET nodes (list)' || key === 'GET pods (list, all namespaces)')
        this.lists.push({ key, ms: performance.now() - t0, bytes })
    } catch (err) {
      if (abort.signal.aborted) return
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' })
      res.end(`proxy: ${(err as Error).message}`)
    }
  }

  /** Notes the Pods shown Running by whole lines of a watch stream; returns the unfinished rest. */
  private seeEvents(text: string): string {
    let nl = text.indexOf('\n')
    while (nl >= 0) {
      const line = text.slice(0, nl)
      text = text.slice(nl + 1)
      nl = text.indexOf('\n')
      // Only lines that can show a Running Pod are parsed.
      if (!line.includes('"Running"')) continue
      const e = JSON.parse(line) as { object?: { metadata?: { name?: string }; status?: { phase?: string } } }
      const name = e.object?.metadata?.name
      if (name && e.object?.status?.phase === 'Running' && !this.runningSeen.has(name))
        this.runningSeen.set(name, performance.now())
    }
    return text
  }

  async close(): Promise<void> {
    this.server.closeAllConnections()
    await new Promise((r) => this.server.close(r))
    await this.k.dispatcher.close()
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/** Headers of one hop (and the host, which is the proxy's). */
const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'host', 'proxy-connection', 'te'])

/** `GET pods (list)`, `POST pods`, `GET pods/log`, `DELETE pods`, `GET nodes (list)`, `GET pods (watch)`. */
export function keyOf(method: string, url: string): string {
  const u = new URL(url, 'http://x')
  const parts = u.pathname.split('/').filter(Boolean)
  if (parts[0] !== 'api' && parts[0] !== 'apis') return `${method} /${parts.join('/')}`
  let i = parts[0] === 'api' ? 2 : 3
  const namespaced = parts[i] === 'namespaces' && parts.length > i + 2
  if (namespaced) i += 2
  const [resource, name, sub] = [parts[i] ?? '(discovery)', parts[i + 1], parts[i + 2]]
  const watch = u.searchParams.get('watch') === '1' || u.searchParams.get('watch') === 'true'
  const scope = !namespaced && resource === 'pods' ? ', all namespaces' : ''
  if (name) return `${method} ${resource}${sub ? `/${sub}` : ''}`
  return `${method} ${resource} (${watch ? 'watch' : method === 'GET' ? 'list' : 'collection'}${scope})`
}
