import type { TestServer } from './server.js'

/** A small CPU queue endpoint running `image`; `overrides` replace top-level fields of the create body. */
export function endpointBody(
  image = 'hangar/echo:latest',
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    name: `test-${image.replace(/\W+/g, '-')}`,
    type: 'QUEUE',
    image,
    cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
    scaling: { type: 'QUEUE_DELAY', queueDelay: 1 },
    workers: { min: 0, max: 1, idleTimeout: 60 },
    ...overrides,
  }
}

/** Creates an endpoint through POST /v2/serverless and returns it; fails the test on anything but 201. */
export async function createEndpoint(
  s: TestServer,
  body: Record<string, unknown>,
  key?: string,
): Promise<{ id: string } & Record<string, any>> {
  const r = await s.api('POST', '/v2/serverless', body, key)
  if (r.status !== 201) throw new Error(`create endpoint: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body
}

/** Calls a job operation with the key sent bare (as the spec's curl examples do) or as Bearer. */
export async function jobCall<T = any>(
  s: TestServer,
  method: string,
  path: string,
  body?: unknown,
  opts: { key?: string; bare?: boolean; contentType?: string } = {},
): Promise<{ status: number; body: T; headers: Headers }> {
  const key = opts.key ?? s.adminKey
  const headers: Record<string, string> = { authorization: opts.bare ? key : `Bearer ${key}` }
  if (body !== undefined) headers['content-type'] = opts.contentType ?? 'application/json'
  const res = await fetch(s.url + path, {
    method,
    headers,
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  })
  const text = await res.text()
  let parsed: unknown = text
  try {
    parsed = text ? JSON.parse(text) : undefined
  } catch {
    // keep text
  }
  return { status: res.status, body: parsed as T, headers: res.headers }
}

/** Waits for a job to reach a final status through /status-sync (event driven on the server). */
export async function waitFinal(s: TestServer, endpointId: string, jobId: string, waitMs = 20_000): Promise<any> {
  const r = await jobCall(s, 'GET', `/v2/${endpointId}/status-sync/${jobId}?wait=${waitMs}`)
  return r.body
}

/** Waits until a job shows `status` (polled: a job starting has no event a client can wait on). */
export async function waitStatus(
  s: TestServer,
  endpointId: string,
  jobId: string,
  status: string,
  timeoutMs = 15_000,
): Promise<any> {
  const until = Date.now() + timeoutMs
  for (;;) {
    const r = await jobCall(s, 'GET', `/v2/${endpointId}/status/${jobId}`)
    if (r.body?.status === status) return r.body
    if (Date.now() > until)
      throw new Error(`job ${jobId} is ${JSON.stringify(r.body)} after ${timeoutMs} ms, not ${status}`)
    await new Promise((res) => setTimeout(res, 50))
  }
}

/** Reads a worker's log stream (SSE) until a line matches, returning the events seen. */
export async function readLogsUntil(
  s: TestServer,
  endpointId: string,
  workerId: string,
  match: RegExp,
  timeoutMs = 15_000,
): Promise<Array<{ id: string; data: { ts: string; source: string; line: string } }>> {
  const ac = new AbortController()
  const timer = setTimeout(() => ac.abort(), timeoutMs)
  const res = await fetch(`${s.url}/v2/serverless/${endpointId}/workers/${workerId}/logs?tail=1000`, {
    headers: { authorization: `Bearer ${s.adminKey}` },
    signal: ac.signal,
  })
  if (res.status !== 200) throw new Error(`logs: ${res.status} ${await res.text()}`)
  const events: Array<{ id: string; data: { ts: string; source: string; line: string } }> = []
  let buf = ''
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buf += Buffer.from(chunk).toString()
      let sep: number
      while ((sep = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, sep)
        buf = buf.slice(sep + 2)
        const id = /^id: (.*)$/m.exec(block)?.[1]
        const data = /^data: (.*)$/m.exec(block)?.[1]
        if (!id || !data) continue
        events.push({ id, data: JSON.parse(data) })
        if (match.test(events[events.length - 1].data.line)) return events
      }
    }
  } finally {
    clearTimeout(timer)
    ac.abort()
  }
  throw new Error(`no log line matched ${match}; saw ${events.map((e) => e.data.line).join(' | ')}`)
}
