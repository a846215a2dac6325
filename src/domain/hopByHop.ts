/** Header values as Node and undici give them. */
export type Headers = Record<string, string | string[] | undefined>

/** Hop-by-hop fields of RFC 9110 §7.6.1 (and the legacy ones proxies still meet); never forwarded. */
const HOP_BY_HOP = new Set(['connection', 'proxy-connection', 'keep-alive', 'te', 'transfer-encoding', 'upgrade', 'proxy-authenticate', 'proxy-authorization'])

/**
 * The headers without hop-by-hop fields: the fixed ones and every field the Connection header names
 * (RFC 9110 §7.6.1). `drop` removes more (e.g. the caller's API key). Names are lower case in and out.
 */
export function endToEnd(headers: Headers, drop: readonly string[] = []): Headers {
  const named = new Set<string>(drop)
  for (const v of [headers.connection ?? []].flat()) for (const token of v.split(',')) if (token.trim()) named.add(token.trim().toLowerCase())
  const out: Headers = {}
  for (const [k, v] of Object.entries(headers)) if (v !== undefined && !HOP_BY_HOP.has(k) && !named.has(k)) out[k] = v
  return out
}

/** Appends the client's address to X-Forwarded-For and names host, scheme and (path form) the prefix the app is served under. */
export function forwardedHeaders(headers: Headers, client: { ip: string; host: string | undefined; proto: string; prefix: string | null }): Headers {
  const prior = [headers['x-forwarded-for'] ?? []].flat().join(', ')
  const out: Headers = { ...headers, 'x-forwarded-for': prior ? `${prior}, ${client.ip}` : client.ip, 'x-forwarded-proto': client.proto }
  if (client.host) out['x-forwarded-host'] = client.host
  if (client.prefix) out['x-forwarded-prefix'] = client.prefix
  return out
}
