import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { endpointBody } from '../helpers/endpoints.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

/** Every integer or number a schema accepts, as `path: schema`, found by walking it. */
function numbers(
  schema: any,
  path: string,
  out: Array<{ path: string; schema: any }>,
  doc: any,
  seen = new Set<any>(),
): void {
  if (!schema || typeof schema !== 'object' || seen.has(schema)) return
  seen.add(schema)
  if (schema.$ref) return numbers(doc.components?.schemas?.[schema.$ref.split('/').pop()], path, out, doc, seen)
  const types = [schema.type].flat()
  if (types.includes('integer') || types.includes('number')) out.push({ path, schema })
  for (const [k, v] of Object.entries(schema.properties ?? {})) numbers(v, `${path}.${k}`, out, doc, seen)
  for (const v of Object.values(schema.patternProperties ?? {})) numbers(v, `${path}.*`, out, doc, seen)
  if (typeof schema.additionalProperties === 'object') numbers(schema.additionalProperties, `${path}.*`, out, doc, seen)
  numbers(schema.items, `${path}[]`, out, doc, seen)
  for (const k of ['oneOf', 'anyOf', 'allOf']) for (const v of schema[k] ?? []) numbers(v, path, out, doc, seen)
}

describe('numbers in requests have upper bounds', () => {
  let s: TestServer
  let doc: any
  beforeAll(async () => {
    s = await startTestServer()
    doc = await (await fetch(`${s.url}/v2/openapi.json`)).json()
  })
  afterAll(() => s.stop())

  it('gives every integer and number of every request body and parameter a maximum within 2^53', () => {
    const found: Array<{ path: string; schema: any }> = []
    for (const [p, ops] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(ops)) {
        for (const [type, media] of Object.entries<any>(op.requestBody?.content ?? {}))
          numbers(media.schema, `${method.toUpperCase()} ${p} body(${type})`, found, doc)
        for (const param of op.parameters ?? [])
          numbers(param.schema, `${method.toUpperCase()} ${p} ${param.in}.${param.name}`, found, doc)
      }
    }
    expect(found.length).toBeGreaterThan(20)
    const unbounded = found
      .filter((f) => typeof f.schema.maximum !== 'number' || f.schema.maximum > Number.MAX_SAFE_INTEGER)
      .map((f) => f.path)
    expect(unbounded).toEqual([])
  })

  it('refuses 1e308 and integers beyond 2^53 in integer fields instead of echoing or rounding them', async () => {
    const huge = await s.api(
      'POST',
      '/v2/serverless',
      JSON.stringify(endpointBody()).replace('"idleTimeout":60}', '"idleTimeout":60},"disk":1e308'),
    )
    expect(huge.status).toBe(422)
    expect(huge.body.errors).toEqual([expect.stringMatching(/^disk: must be <= \d+$/)])
    const beyond = await s.api(
      'POST',
      '/v2/serverless',
      JSON.stringify(endpointBody()).replace('"max":1', '"max":9007199254740993'),
    )
    expect(beyond.status).toBe(422)
    expect(beyond.body.errors).toEqual([expect.stringMatching(/^workers\.max: must be <= \d+$/)])
  })
})
