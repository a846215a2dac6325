import type { KubeConfig } from '@kubernetes/client-node'
import { Agent, type Dispatcher, request } from 'undici'

/**
 * Plain HTTP access to an API server with a kubeconfig's credentials. The fleet's controller makes thousands
 * of small writes (Node heartbeats, Pod status); undici with JSON bodies costs far less CPU than the client's
 * typed calls, whose (de)serialization of every object would load the process that also runs the workers.
 */
export interface KubeHttp {
  /** The API server's base URL (`https://127.0.0.1:6443`). */
  base: string
  /** Authentication headers (the bearer token). */
  headers: Record<string, string>
  dispatcher: Dispatcher
}

export async function kubeHttp(kc: KubeConfig, connections = 32): Promise<KubeHttp> {
  const o: { ca?: Buffer; cert?: Buffer; key?: Buffer; headers?: Record<string, string> } = {}
  await kc.applyToHTTPSOptions(o as never)
  const server = kc.getCurrentCluster()?.server
  if (!server) throw new Error('the kubeconfig names no cluster')
  return {
    base: server.replace(/\/+$/, ''),
    headers: o.headers ?? {},
    dispatcher: new Agent({
      connections,
      connect: { ca: o.ca, cert: o.cert, key: o.key },
      // Watches stay open for minutes.
      headersTimeout: 0,
      bodyTimeout: 0,
    }),
  }
}

/** Content types of the patches used here. */
export const MERGE_PATCH = 'application/merge-patch+json'

/** One call; the answer's JSON (null when empty). Throws on a status other than 2xx, or `ok` ones. */
export async function kubeCall<T = any>(
  k: KubeHttp,
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE',
  path: string,
  body?: unknown,
  opts: { contentType?: string; ok?: number[] } = {},
): Promise<{ status: number; body: T }> {
  const res = await request(`${k.base}${path}`, {
    method,
    dispatcher: k.dispatcher,
    headers: {
      ...k.headers,
      accept: 'application/json',
      ...(body === undefined ? {} : { 'content-type': opts.contentType ?? 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.body.text()
  const json = text ? JSON.parse(text) : null
  if ((res.statusCode < 200 || res.statusCode >= 300) && !opts.ok?.includes(res.statusCode))
    throw new Error(`${method} ${path}: ${res.statusCode} ${json?.message ?? text.slice(0, 200)}`)
  return { status: res.statusCode, body: json }
}

/**
 * Watches `path` (a list URL with its query) from `resourceVersion` until the server ends the watch or
 * `signal` aborts; each event goes to `onEvent`. Resolves with the last resourceVersion seen, or null when the
 * server said it is too old (410: list again).
 */
export async function kubeWatch(
  k: KubeHttp,
  path: string,
  resourceVersion: string,
  onEvent: (type: string, object: any) => void,
  signal: AbortSignal,
): Promise<string | null> {
  const sep = path.includes('?') ? '&' : '?'
  const res = await request(
    `${k.base}${path}${sep}watch=1&allowWatchBookmarks=true&timeoutSeconds=240&resourceVersion=${resourceVersion}`,
    { method: 'GET', dispatcher: k.dispatcher, headers: k.headers, signal },
  )
  if (res.statusCode === 410) {
    await res.body.dump()
    return null
  }
  if (res.statusCode !== 200)
    throw new Error(`watch ${path}: ${res.statusCode} ${(await res.body.text()).slice(0, 200)}`)
  let rv = resourceVersion
  let rest = ''
  for await (const chunk of res.body) {
    rest += chunk.toString()
    let nl = rest.indexOf('\n')
    while (nl >= 0) {
      const line = rest.slice(0, nl)
      rest = rest.slice(nl + 1)
      nl = rest.indexOf('\n')
      if (!line.trim()) continue
      const e = JSON.parse(line) as { type: string; object: any }
      if (e.type === 'ERROR') return e.object?.code === 410 ? null : rv
      rv = e.object?.metadata?.resourceVersion ?? rv
      if (e.type !== 'BOOKMARK') onEvent(e.type, e.object)
    }
  }
  return rv
}
