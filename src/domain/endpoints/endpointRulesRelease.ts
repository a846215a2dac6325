import type { EndpointSpec } from './endpoint.js'

/** One changed field of a release. */
export interface FieldChange {
  field: string
  old: unknown
  new: unknown
}

/**
 * The fields that decide what a worker runs and where: a change to any of them makes a new release, and
 * workers on an older version are stale. `args` is left out because `cmd` and `entrypoint` are the command
 * it describes (a respelled `args` runs the same thing). Not here, so no release: `name`, `workers.*` and
 * `scaling` (how many workers, not what they run), `timeout` (a per-request limit the platform enforces)
 * and `flashboot` (a start-up cache option).
 */
const WORKER_FIELDS = [
  'image',
  'cmd',
  'entrypoint',
  'env',
  'disk',
  'ports',
  'registry',
  'gpu',
  'cpu',
  'networkVolumes',
  'dataCenterIds',
] as const

/**
 * What changed between two versions of an endpoint, in dotted fields (`gpu.count`, `env.MODEL`); objects are
 * compared per key, arrays as a whole. `before` null (a create) lists every worker field that has a value,
 * each with `old: null`. An empty result means no new release.
 */
export function releaseDiff(before: EndpointSpec | null, after: EndpointSpec): FieldChange[] {
  const out: FieldChange[] = []
  for (const key of WORKER_FIELDS) compare(key, before ? before[key] : undefined, after[key], out, before === null)
  return out
}

function compare(field: string, a: unknown, b: unknown, out: FieldChange[], creating: boolean): void {
  if (isPlainObject(a) || isPlainObject(b)) {
    const ao = isPlainObject(a) ? a : {}
    const bo = isPlainObject(b) ? b : {}
    // A GPU endpoint never becomes a CPU one, so a whole-object appearance only happens on create.
    for (const k of new Set([...Object.keys(ao), ...Object.keys(bo)]))
      compare(`${field}.${k}`, ao[k], bo[k], out, creating)
    return
  }
  const old = a === undefined ? null : a
  const now = b === undefined ? null : b
  if (creating && (now === null || (Array.isArray(now) && now.length === 0) || now === '')) return
  if (JSON.stringify(old) !== JSON.stringify(now)) out.push({ field, old, new: now })
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}
