import { Ajv, type ErrorObject, type Options } from 'ajv'
import * as addFormatsModule from 'ajv-formats'
import type { FastifySchemaCompiler } from 'fastify'
import { NO_NUL_PATTERN } from '../contract/container.js'

// ajv-formats ships CommonJS with a default export; under NodeNext it arrives wrapped.
const addFormats = (addFormatsModule as unknown as { default: (ajv: Ajv) => Ajv }).default

const common: Options = {
  allErrors: true, // report every failure, not the first
  removeAdditional: false, // closed bodies reject unknown keys instead of dropping them
  strict: false,
  verbose: true, // keeps parentSchema, to word anyOf/enum failures
  discriminator: true,
}

/**
 * `"x-powerOfTwo": true` on an integer (vCPU counts): a value rule in the schema, so that it is reported
 * together with every other schema violation of the body rather than after them.
 */
const POWER_OF_TWO = {
  keyword: 'x-powerOfTwo',
  type: 'integer' as const,
  schemaType: 'boolean' as const,
  validate: (on: boolean, v: number) => !on || (v > 0 && (v & (v - 1)) === 0),
}

/**
 * Bodies are validated as sent: no type coercion ("5" is not 5) and no defaults filled in, because the
 * rules must tell an omitted field from one set to its default. Query strings and path parameters are text,
 * so they are coerced and defaulted.
 */
export function validatorCompiler(): FastifySchemaCompiler<unknown> {
  const body = new Ajv({ ...common, coerceTypes: false, useDefaults: false })
  const text = new Ajv({ ...common, coerceTypes: 'array', useDefaults: true })
  addFormats(body)
  addFormats(text)
  for (const ajv of [body, text]) ajv.addKeyword(POWER_OF_TWO)
  return ({ schema, httpPart }) =>
    (httpPart === 'body' ? body : text).compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>
}

/** Turns Ajv failures into `path: rule` lines, one per failure, e.g. `gpu.count: must be >= 1`. */
export function formatValidationErrors(errors: ErrorObject[], context?: string): string[] {
  const prefix = context && context !== 'body' ? (context === 'querystring' ? 'query' : context) : ''
  // A failed anyOf reports every branch's complaint too; keep only the anyOf, worded from its branches.
  const anyOfPaths = errors
    .filter((e) => e.keyword === 'anyOf')
    .map((e) => ({ schemaPath: e.schemaPath, instancePath: e.instancePath }))
  const out: string[] = []
  for (const e of errors) {
    if (
      e.keyword !== 'anyOf' &&
      anyOfPaths.some((a) => e.schemaPath.startsWith(a.schemaPath + '/') && e.instancePath.startsWith(a.instancePath))
    )
      continue
    // propertyNames reports the failing name twice: once with the rule that failed (kept), once wrapped.
    if (e.keyword === 'if' || e.keyword === 'propertyNames') continue
    if (e.keyword === 'discriminator') {
      // Ajv reports a missing or unknown tag of a discriminated union; say which values the tag takes.
      const { tag, tagValue } = e.params as { tag: string; tagValue: unknown }
      const values = (
        (e.parentSchema as { oneOf?: Array<{ properties?: Record<string, { const?: unknown }> }> })?.oneOf ?? []
      ).map((b) => JSON.stringify(b.properties?.[tag]?.const))
      out.push(
        `${path(prefix, e.instancePath, tag)}: ${tagValue === undefined ? 'is required' : `must be one of ${values.join(', ')}, got ${JSON.stringify(tagValue)}`}`,
      )
      continue
    }
    const name = (e as ErrorObject & { propertyName?: string }).propertyName
    if (name !== undefined) {
      const rule =
        e.keyword === 'pattern' && (e.params as { pattern?: string }).pattern === NO_NUL_PATTERN
          ? NO_NUL_RULE
          : message({ ...e, data: name })
      out.push(`${path(prefix, e.instancePath)}: key ${JSON.stringify(name)} ${rule}`)
      continue
    }
    out.push(
      `${path(prefix, e.instancePath, e.keyword === 'required' ? (e.params as { missingProperty: string }).missingProperty : undefined)}: ${message(e)}`,
    )
  }
  return [...new Set(out)]
}

const NO_NUL_RULE = 'must not contain a NUL character (\\u0000), which no program can be given'

function path(prefix: string, pointer: string, child?: string): string {
  const parts = pointer
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
  if (child !== undefined) parts.push(child)
  let out = prefix
  for (const p of parts) out += /^\d+$/.test(p) ? `[${p}]` : out ? `.${p}` : p
  return out || '$'
}

function message(e: ErrorObject): string {
  const params = e.params as Record<string, unknown>
  switch (e.keyword) {
    case 'required':
      return 'is required'
    case 'additionalProperties':
      return `additional properties '${params.additionalProperty}' not allowed`
    case 'enum':
      return `must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}, got ${JSON.stringify(e.data)}`
    case 'const':
      return `must be ${JSON.stringify(params.allowedValue)}`
    case 'anyOf':
      return `must be ${describeBranches((e.parentSchema as { anyOf?: object[] })?.anyOf ?? [])}`
    case 'type':
      return `must be ${params.type}, got ${typeName(e.data)}`
    case 'uniqueItems':
      return `must not contain duplicates (items ${params.j} and ${params.i} are equal)`
    case 'pattern':
      if (params.pattern === NO_NUL_PATTERN) return `${NO_NUL_RULE}, got ${JSON.stringify(e.data)}`
      return `must match ${params.pattern}, got ${JSON.stringify(e.data)}`
    case 'x-powerOfTwo':
      return `must be a power of two, got ${JSON.stringify(e.data)}`
    case 'format':
      return `must be a valid ${params.format}, got ${JSON.stringify(e.data)}`
    default:
      return e.message ?? e.keyword
  }
}

function describeBranches(branches: object[]): string {
  const words = branches.map((b) => {
    const s = b as { const?: unknown; type?: string; enum?: unknown[]; properties?: { type?: { const?: unknown } } }
    if (s.const !== undefined) return JSON.stringify(s.const)
    if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(', ')
    if (s.properties?.type?.const !== undefined) return `an object with type ${JSON.stringify(s.properties.type.const)}`
    return s.type ?? 'a valid value'
  })
  return words.length <= 1 ? words.join('') : `${words.slice(0, -1).join(', ')} or ${words[words.length - 1]}`
}

function typeName(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v
}
