import type { TestServer } from './server.js'

/** A LOAD_BALANCER endpoint running the sample HTTP worker; `overrides` replace top-level fields. */
export function lbBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'lb-test',
    type: 'LOAD_BALANCER',
    image: 'hangar/http:latest',
    cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
    scaling: { type: 'REQUEST_COUNT', requestCount: 4 },
    workers: { min: 0, max: 2, idleTimeout: 60 },
    env: { HTTP_INIT_MS: '300' },
    ...overrides,
  }
}

/** Calls `/lb/{endpointId}{path}` with the admin key (or `key`; null sends none). */
export function lbFetch(
  s: TestServer,
  endpointId: string,
  path: string,
  init: RequestInit & { key?: string | null } = {},
): Promise<Response> {
  const { key = s.adminKey, ...rest } = init
  const headers = new Headers(rest.headers)
  if (key !== null) headers.set('authorization', `Bearer ${key}`)
  return fetch(`${s.url}/lb/${endpointId}${path}`, { ...rest, headers })
}
