import type { Endpoint, Release } from '../../contract/endpoint.js'

/**
 * An endpoint as stored: the response shape without `requestUrls` (built from the public URL when
 * answering), plus its owner, the current release version and the template it was created from.
 * `workers.idleTimeout` is stored only where it applies (not for a QUEUE endpoint on REQUEST_COUNT).
 */
export type EndpointRecord = Omit<Endpoint, 'requestUrls'> & {
  accountId: string
  /** Release version workers must run; bumped by every change to what workers run. */
  version: number
  /** The template the endpoint was created from (or last PATCHed with); its settings were copied then. */
  templateId: string | null
}

/** What the rules decide about an endpoint: everything but identity, owner, time and version. */
export type EndpointSpec = Omit<EndpointRecord, 'id' | 'accountId' | 'createdAt' | 'version'>

/** A release as stored, beside the endpoint it belongs to. */
export type ReleaseRecord = Release & { accountId: string; endpointId: string }

/** Where a load-balancing worker answers health checks unless its env sets HEALTH_CHECK_PATH. */
export const DEFAULT_HEALTH_CHECK_PATH = '/ping'

/**
 * The URLs clients call, built from the public base URL when answering (never stored, so a changed
 * HANGAR_PUBLIC_URL applies to existing endpoints).
 *
 * QUEUE endpoints get the job operations under `{base}/v2/{id}`, as the spec's queue URL. LOAD_BALANCER
 * endpoints are addressed by path rather than by a host name per endpoint, so Hangar needs no wildcard DNS:
 * `base` is `{base}/lb/{id}` (worker-defined paths go after it), or `{scheme}://{id}.{lbDomain}` when a
 * load-balancer domain is configured, and `health` is `base` plus the endpoint's
 * HEALTH_CHECK_PATH env value (default /ping), the path the platform polls on each worker.
 */
export function requestUrls(
  endpoint: Pick<EndpointRecord, 'id' | 'type' | 'env'>,
  publicBase: string,
  lbDomain?: string,
): Endpoint['requestUrls'] {
  const base = publicBase.replace(/\/+$/, '')
  const id = encodeURIComponent(endpoint.id)
  if (endpoint.type === 'LOAD_BALANCER') {
    // With a load-balancer domain, the endpoint is a host of its own (apps that build absolute paths keep working).
    const lb = lbDomain ? `${new URL(base).protocol}//${endpoint.id}.${lbDomain}` : `${base}/lb/${id}`
    return { base: lb, health: lb + healthCheckPath(endpoint.env) }
  }
  const q = `${base}/v2/${id}`
  return {
    run: `${q}/run`,
    runSync: `${q}/runsync`,
    status: `${q}/status/{job_id}`,
    stream: `${q}/stream/{job_id}`,
    cancel: `${q}/cancel/{job_id}`,
    retry: `${q}/retry/{job_id}`,
    purgeQueue: `${q}/purge-queue`,
    health: `${q}/health`,
  }
}

/** The worker health path of a load-balancing endpoint, always starting with `/`. */
export function healthCheckPath(env: Record<string, string>): string {
  const path = env.HEALTH_CHECK_PATH?.trim() || DEFAULT_HEALTH_CHECK_PATH
  return path.startsWith('/') ? path : `/${path}`
}

/** The response shape of a stored endpoint. */
export function toEndpoint(record: EndpointRecord, publicBase: string, lbDomain?: string): Endpoint {
  const { accountId: _a, version: _v, templateId: _t, ...rest } = record
  return { ...rest, requestUrls: requestUrls(record, publicBase, lbDomain) }
}

/**
 * The endpoint a request's Host header addresses under the load-balancer domain (`{id}.{domain}`), or
 * null. The port is ignored unless the domain names one.
 */
export function lbHostEndpoint(host: string | undefined, lbDomain: string): string | null {
  if (!host) return null
  const h = host.toLowerCase()
  const hostOnly = lbDomain.includes(':') ? h : h.replace(/:\d+$/, '')
  const suffix = `.${lbDomain.toLowerCase()}`
  if (!hostOnly.endsWith(suffix)) return null
  const id = hostOnly.slice(0, -suffix.length)
  return /^[a-z0-9][a-z0-9-]*$/.test(id) ? id : null
}
