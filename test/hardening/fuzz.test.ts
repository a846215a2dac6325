import { Pool } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createEndpoint, endpointBody } from '../helpers/endpoints.js'
import { startTestServer, type TestServer } from '../helpers/server.js'
import { prng } from '../helpers/prng.js'

const SEED = 20261123
const REQUESTS = 3_000
const CONCURRENCY = 8

interface Case {
  method: string
  path: string
  headers: Record<string, string>
  body?: Buffer
  why: string
}

/**
 * Walks /v2/openapi.json and sends every route mutated requests (fixed seed): parameters, query strings,
 * bodies made from the route's schema then broken, raw malformed bodies, content types and keys. Every
 * answer must be below 500, and every error an RFC 9457 problem.
 */
describe('fuzzing every route of the OpenAPI document', () => {
  let s: TestServer
  let doc: any
  let endpointId: string
  beforeAll(async () => {
    // No host: endpoints can be made, but no worker is ever started. Short long-polls keep the run quick.
    s = await startTestServer({ fleet: { detectGpus: false, hosts: [] }, jobs: { streamWaitMs: 500 } })
    endpointId = (
      await createEndpoint(s, endpointBody('hangar/echo:latest', { workers: { min: 0, max: 1, idleTimeout: 60 } }))
    ).id
    doc = await (await fetch(`${s.url}/v2/openapi.json`)).json()
  })
  afterAll(() => s?.stop())

  it(`answers ${REQUESTS} mutated requests with no 5xx and a problem for every error`, {
    timeout: 180_000,
  }, async () => {
    const rnd = prng(SEED)
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]
    const chance = (p: number) => rnd() < p
    const resolve = (schema: any): any => (schema?.$ref ? doc.components.schemas[schema.$ref.split('/').pop()] : schema)
    const junk = (): unknown =>
      pick<() => unknown>([
        () => null,
        () => '',
        () => 'x'.repeat(Math.floor(rnd() * 5000)),
        () => -1,
        () => 0,
        () => 1e308,
        () => 2 ** 53 + 2,
        () => 0.5,
        () => true,
        () => [],
        () => ({}),
        () => [1, 'a', null],
        () => ({ nested: { deeper: [{}] } }),
        () => '\u0000\u202e<script>',
        () => '../../etc/passwd',
        () => '%ZZ',
        () => 'NVIDIA A40',
        () => 'hangar-echo',
        () => endpointId,
      ])()
    /** A value of `schema`, mostly valid; `depth` bounds recursion. */
    const sample = (raw: any, depth = 0): unknown => {
      const schema = resolve(raw)
      if (!schema || depth > 6) return junk()
      if (chance(0.08)) return junk()
      if (schema.const !== undefined) return schema.const
      if (schema.enum) return pick(schema.enum)
      const branches = schema.oneOf ?? schema.anyOf
      if (branches) return sample(pick(branches), depth + 1)
      if (schema.allOf) return Object.assign({}, ...schema.allOf.map((b: any) => sample(b, depth + 1)))
      switch ([schema.type].flat()[0]) {
        case 'integer':
        case 'number': {
          const lo = schema.minimum ?? 0
          const hi = schema.maximum ?? lo + 100
          return chance(0.8)
            ? Math.floor(lo + rnd() * (Math.min(hi, lo + 1000) - lo + 1))
            : pick([lo - 1, hi + 1, 1e308, -(2 ** 53) - 2, 1.5])
        }
        case 'boolean':
          return chance(0.5)
        case 'string':
          if (schema.format === 'uri') return pick(['http://127.0.0.1:9/hook', 'ftp://x', 'not a url'])
          if (schema.format === 'date-time') return pick(['2099-01-01T00:00:00Z', '2000-01-01T00:00:00Z', 'yesterday'])
          if (schema.pattern && chance(0.5)) return pick(['12.4', '/workspace', '8888/http', 'x'])
          return pick(['a', 'echo', 'cpu3c', 'ADA_24', 'hangar-echo', 'EU-RO-1', endpointId, 'x'.repeat(300), ''])
        case 'array':
          return Array.from({ length: Math.floor(rnd() * 3) }, () => sample(schema.items, depth + 1))
        default: {
          const out: Record<string, unknown> = {}
          for (const [k, v] of Object.entries<any>(schema.properties ?? {}))
            if ((schema.required ?? []).includes(k) ? !chance(0.05) : chance(0.4)) out[k] = sample(v, depth + 1)
          if (chance(0.05)) out[pick(['bogus', '__proto__x', 'constructor'])] = junk()
          return out
        }
      }
    }
    const deep = (n: number) => '['.repeat(n) + ']'.repeat(n)
    const rawBodies: Array<() => Buffer> = [
      () => Buffer.from('{"input":'),
      () => Buffer.from('{"a":1} trailing'),
      () => Buffer.from(`{"input":{"d":${deep(3000)}}}`),
      () => Buffer.from('{"input":{"n":1e999}}'),
      () => Buffer.from('{"input":{"n":NaN}}'),
      () => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"name":"bom"}')]),
      () => Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]),
      () => Buffer.from('{"__proto__":{"admin":true}}'),
      () => Buffer.from('[]'),
      () => Buffer.from('"just a string"'),
      () => Buffer.from('   '),
      () => Buffer.from('name=x&type=QUEUE'),
    ]
    const param = (name: string): string =>
      pick([
        () => endpointId,
        () => endpointId,
        () => 'nope',
        () => encodeURIComponent('ünï code'),
        () => 'x'.repeat(pick([127, 128, 129, 300])),
        () => '%ZZ',
        () => '%C0%AF',
        () => '..%2F..',
        () => `${name}-${Math.floor(rnd() * 1e6)}`,
        () => 'wh_123',
      ])()
    const query = (op: any): string => {
      const parts: string[] = []
      for (const p of op.parameters ?? []) {
        // `wait` always, and short: without it a runsync on a worker-less endpoint is held 90 s, by design.
        if (p.in !== 'query' || (p.name !== 'wait' && !chance(0.5))) continue
        const v =
          p.name === 'wait'
            ? pick(['1000', '1200', '-5', 'abc', '300001', '1e12'])
            : String(pick([sample(p.schema), junk(), 'abc', '-1', '99999999999999999999']))
        parts.push(`${encodeURIComponent(p.name)}=${encodeURIComponent(v)}`)
      }
      if (chance(0.05)) parts.push('x=%ZZ')
      return parts.length ? `?${parts.join('&')}` : ''
    }

    const ops: Array<{ method: string; path: string; op: any }> = []
    for (const [path, methods] of Object.entries<any>(doc.paths))
      for (const [method, op] of Object.entries<any>(methods)) ops.push({ method: method.toUpperCase(), path, op })
    expect(ops.length).toBeGreaterThan(40)

    const cases: Case[] = []
    for (let i = 0; i < REQUESTS; i++) {
      const { method, path, op } = ops[i % ops.length]
      const url = path.replace(/\{(\w+)\}/g, (_m, name: string) => param(name)) + query(op)
      const headers: Record<string, string> = {}
      const auth = pick(['bearer', 'bearer', 'bearer', 'bare', 'none', 'garbage', 'long'])
      if (auth === 'bearer') headers.authorization = `Bearer ${s.adminKey}`
      else if (auth === 'bare') headers.authorization = s.adminKey
      else if (auth === 'garbage') headers.authorization = 'Bearer \u00e9\u00e9-not-a-key'.replace(/[^\x20-\x7e]/g, '?')
      else if (auth === 'long') headers.authorization = `Bearer ${'k'.repeat(8000)}`
      const bodySchema = op.requestBody?.content?.['application/json']?.schema
      let body: Buffer | undefined
      let why = 'schema'
      if (bodySchema || chance(0.2)) {
        if (chance(0.25)) {
          const r = Math.floor(rnd() * rawBodies.length)
          body = rawBodies[r]()
          why = `raw#${r}`
        } else body = Buffer.from(JSON.stringify(sample(bodySchema ?? { type: 'object' })))
        const ct = pick([
          'application/json',
          'application/json',
          'application/json',
          'application/json; charset=utf-8',
          'application/json; charset=utf-16',
          'text/plain',
          '',
          'none',
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=x',
          'application/JSON',
        ])
        if (ct !== 'none') headers['content-type'] = ct
      }
      const m = chance(0.04) ? pick(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) : method
      cases.push({ method: m, path: url, headers, body: m === 'GET' ? undefined : body, why })
    }

    const pool = new Pool(s.url, { connections: CONCURRENCY, headersTimeout: 30_000, bodyTimeout: 30_000 })
    const failures: string[] = []
    const statuses = new Map<number, number>()
    let next = 0
    const t0 = Date.now()
    const lane = async () => {
      while (next < cases.length) {
        const c = cases[next++]
        const label = `${c.method} ${c.path.slice(0, 120)} [${c.why}, ${c.headers['content-type'] ?? 'no type'}]`
        try {
          // The OpenAI route holds a request until its job ends (no worker here ever runs it): cut it short.
          const held = c.path.includes('/openai/')
          const res = await pool.request({
            method: c.method as 'GET',
            path: c.path,
            headers: c.headers,
            body: c.body,
            signal: held ? AbortSignal.timeout(2_000) : undefined,
          })
          const text = await res.body.text()
          statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
          if (res.statusCode >= 500) failures.push(`${label} -> ${res.statusCode} ${text.slice(0, 200)}`)
          else if (res.statusCode >= 400) {
            const type = String(res.headers['content-type'] ?? '')
            let problem: any
            try {
              problem = JSON.parse(text)
            } catch {
              problem = undefined
            }
            if (
              !type.startsWith('application/problem+json') ||
              problem?.status !== res.statusCode ||
              typeof problem.title !== 'string' ||
              typeof problem.detail !== 'string'
            ) {
              failures.push(`${label} -> ${res.statusCode} not a problem: ${type} ${text.slice(0, 200)}`)
            }
          }
        } catch (err) {
          if (c.path.includes('/openai/') && (err as Error).name === 'TimeoutError') continue
          failures.push(`${label} -> ${(err as Error).message}`)
        }
      }
    }
    try {
      await Promise.all(Array.from({ length: CONCURRENCY }, lane))
    } finally {
      await pool.close()
    }
    console.log(
      `fuzz: ${cases.length} requests in ${Date.now() - t0} ms (seed ${SEED}); statuses ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}`,
    )
    expect(failures.slice(0, 30)).toEqual([])
    expect(statuses.size).toBeGreaterThan(6)
  })
})
