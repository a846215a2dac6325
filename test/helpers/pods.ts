import { readFileSync } from 'node:fs'
import { expect } from 'vitest'
import type { TestServer } from './server.js'
import { until } from './until.js'

/** A CPU pod running the sample pod program with an HTTP port; `overrides` replace top-level fields. */
export function podBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'sample',
    image: 'hangar/pod:latest',
    cpu: { id: 'cpu3c', vcpuCount: 2 },
    ports: ['8080/http'],
    ...overrides,
  }
}

/** POST /v2/pods; fails the test on anything but 201. */
export async function createPod(s: TestServer, body: Record<string, unknown>, key?: string): Promise<any> {
  const r = await s.api('POST', '/v2/pods', body, key)
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return r.body
}

/** Polls GET /v2/pods/{id} until the pod is `status`. */
export async function waitPod(
  s: TestServer,
  id: string,
  status: string,
  key?: string,
  timeoutMs = 20_000,
): Promise<any> {
  let last: any
  return until(
    async () => {
      const r = await s.api('GET', `/v2/pods/${id}`, undefined, key)
      last = r.body
      return r.body?.status === status ? r.body : undefined
    },
    timeoutMs,
    `pod ${id} ${status} (last: ${JSON.stringify(last?.status)})`,
  ).catch((err) => {
    throw new Error(`${(err as Error).message}; pod: ${JSON.stringify(last)}`)
  })
}

/** The host URL of a RUNNING pod's private port. */
export function portUrl(pod: any, port: number): string {
  const p = pod.runtime.ports.find((x: any) => x.private === port)
  return `http://${p.ip}:${p.public}`
}

/** Waits until a RUNNING pod's program answers HTTP on its private `port` (RUNNING comes as the program starts; its port opens a moment later) and returns the parsed answer. */
export async function waitPortAnswers(pod: any, port: number, timeoutMs = 10_000): Promise<any> {
  return until(
    async () =>
      fetch(portUrl(pod, port))
        .then((r) => r.json())
        .catch(() => undefined),
    timeoutMs,
    `port ${port} of pod ${pod.id} answering`,
  )
}

export interface SseEvent {
  id: string
  data: { ts: string; source: string; line: string }
}

/** Reads a pod's log stream until a line matches `match` (or, with `count`, that many events came). */
export async function readPodLogs(
  s: TestServer,
  id: string,
  opts: { query?: string; lastEventId?: string; match?: RegExp; count?: number; timeoutMs?: number } = {},
): Promise<SseEvent[]> {
  const ac = new AbortController()
  const timer = setTimeout(() => ac.abort(), opts.timeoutMs ?? 15_000)
  const headers: Record<string, string> = { authorization: `Bearer ${s.adminKey}` }
  if (opts.lastEventId) headers['last-event-id'] = opts.lastEventId
  const events: SseEvent[] = []
  try {
    const res = await fetch(`${s.url}/v2/pods/${id}/logs${opts.query ? `?${opts.query}` : ''}`, {
      headers,
      signal: ac.signal,
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/event-stream')
    let buf = ''
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buf += Buffer.from(chunk).toString()
      let sep: number
      while ((sep = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, sep)
        buf = buf.slice(sep + 2)
        const eid = /^id: (.*)$/m.exec(block)?.[1]
        const data = /^data: (.*)$/m.exec(block)?.[1]
        if (!eid || !data) continue
        events.push({ id: eid, data: JSON.parse(data) })
        if (
          opts.match?.test(events[events.length - 1].data.line) ||
          (opts.count !== undefined && events.length >= opts.count)
        )
          return events
      }
    }
  } catch (err) {
    if (!ac.signal.aborted) throw err
  } finally {
    clearTimeout(timer)
    ac.abort()
  }
  if (opts.match || opts.count !== undefined)
    throw new Error(
      `log stream ended without ${opts.match ?? `${opts.count} events`}; saw ${events.map((e) => e.data.line).join(' | ')}`,
    )
  return events
}

/** The OS pid inside a process runtime ref (`process:<host>:<pid>:...`). */
export function pidOf(ref: string | null): number | null {
  const m = /^process:[^:]+:(\d+):/.exec(ref ?? '')
  return m ? Number(m[1]) : null
}

/**
 * True while a process with this pid runs. A zombie counts as ended: a program whose parent died is
 * reparented to PID 1, and where PID 1 does not reap (some CI containers) it stays a zombie for good.
 */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z'
  } catch {
    return false
  }
}

/** Terminates every pod of the key's account (tests leave no program behind). */
export async function terminateAll(s: TestServer, key?: string): Promise<void> {
  const r = await s.api('GET', '/v2/pods?includeClusterPods=true', undefined, key)
  for (const p of r.body?.pods ?? []) await s.api('DELETE', `/v2/pods/${p.id}`, undefined, key)
}
