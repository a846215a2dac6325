/** Header values as Node and undici give them. */
export type Headers = Record<string, string | string[] | undefined>

/** Hop-by-hop fields of RFC 9110 §7.6.1 (and the legacy ones proxies still meet); never forwarded. */
const HOP_BY_HOP = new Set([
  'connection',
  'proxy-connection',
  'keep-alive',
  'te',
  'transfer-encoding',
  'upgrade',
  'proxy-authenticate',
  'proxy-authorization',
])

/**
 * The headers without hop-by-hop fields: the fixed ones and every field the Connection header names
 * (RFC 9110 §7.6.1). `drop` removes more (e.g. the caller's API key). Names are lower case in and out.
 */
export function endToEnd(headers: Headers, drop: readonly string[] = []): Headers {
  // On every proxied request and response: one pass, and a set of named fields only when Connection names some.
  const connection = headers.connection
  let named: Set<string> | undefined
  if (connection !== undefined) {
    named = new Set()
    for (const v of typeof connection === 'string' ? [connection] : connection)
      for (const token of v.split(',')) if (token.trim()) named.add(token.trim().toLowerCase())
  }
  const out: Headers = {}
  for (const k in headers) {
    const v = headers[k]
    if (v !== undefined && !HOP_BY_HOP.has(k) && !drop.includes(k) && !named?.has(k)) out[k] = v
  }
  return out
}

/** Appends the client's address to X-Forwarded-For and names host, scheme and (path form) the prefix the app is served under. */
export function forwardedHeaders(
  headers: Headers,
  client: { ip: string; host: string | undefined; proto: string; prefix: string | null },
): Headers {
  // Adds to `headers` itself (a copy endToEnd just made, on the proxy's hot path).
  const xff = headers['x-forwarded-for']
  const prior = xff === undefined ? '' : typeof xff === 'string' ? xff : xff.join(', ')
  headers['x-forwarded-for'] = prior ? `${prior}, ${client.ip}` : client.ip
  headers['x-forwarded-proto'] = client.proto
  if (client.host) headers['x-forwarded-host'] = client.host
  if (client.prefix) headers['x-forwarded-prefix'] = client.prefix
  return headers
}
