import type { GpuConfig, GpuCreate, GpuUpdate } from '../../contract/endpoint.js'
import type { Violations } from '../errors.js'

/** Serverless pool id -> the GPU type ids in it, as the catalog has them. */
export type Pools = ReadonlyMap<string, readonly string[]>

/**
 * R7, the value rules of `excludedTypes` (422, like any field that fails validation): each value is
 * trimmed, must not be empty after trimming, must not start with `-`, and must not repeat once trimmed
 * (the schema's uniqueItems sees only exact duplicates). Returns the trimmed list.
 */
export function normalizeExcludedTypes(
  raw: readonly string[] | undefined,
  path: string,
  invalid: Violations,
): string[] {
  const out: string[] = []
  for (const [i, value] of (raw ?? []).entries()) {
    const t = value.trim()
    if (t === '') invalid.add(`${path}[${i}]`, `must not be empty after trimming, got ${JSON.stringify(value)}`)
    else if (t.startsWith('-')) invalid.add(`${path}[${i}]`, `must not start with "-", got ${JSON.stringify(value)}`)
    else if (out.includes(t)) invalid.add(`${path}[${i}]`, `${JSON.stringify(t)} is listed more than once`)
    else out.push(t)
  }
  return out
}

/**
 * The stored `gpu` of a create. `count` defaults to 1. `allowedCudaVersions` is the body's, else the
 * template's (R6: only when the body sets no `minCudaVersion` either, so a floor is never combined with a
 * seeded list), else `[]` (any). Pools are de-duplicated silently: listing a pool twice selects it once.
 */
export function createGpu(body: GpuCreate, excludedTypes: string[], templateCuda: readonly string[] | null): GpuConfig {
  const seeded = body.allowedCudaVersions === undefined && body.minCudaVersion === undefined ? templateCuda : null
  return {
    pools: [...new Set(body.pools)],
    count: body.count ?? 1,
    allowedCudaVersions: [...(body.allowedCudaVersions ?? seeded ?? [])],
    minCudaVersion: body.minCudaVersion ?? null,
    excludedTypes,
  }
}

/**
 * R14, a GPU PATCH applied to the current configuration:
 * - `pools` and `excludedTypes` are one selection: `pools` replaces both (alone it clears the exclusions);
 *   omitting `pools` keeps both. `excludedTypes` without `pools` is refused (400) rather than guessed at:
 *   whether it should replace or extend the current exclusions is not said, and the selection is defined
 *   as replaced together.
 * - `allowedCudaVersions: []` and `minCudaVersion: ""` clear a limit; setting one does not clear the other,
 *   so the R4 conflict is checked on the result.
 */
export function updateGpu(
  current: GpuConfig,
  body: GpuUpdate,
  excludedTypes: string[] | undefined,
  conflicts: Violations,
): GpuConfig {
  if (body.pools === undefined && body.excludedTypes !== undefined) {
    conflicts.add(
      'gpu.excludedTypes',
      'can only be sent together with gpu.pools: pools and excludedTypes are replaced as one selection',
    )
  }
  const selection =
    body.pools !== undefined
      ? { pools: [...new Set(body.pools)], excludedTypes: excludedTypes ?? [] }
      : { pools: [...current.pools], excludedTypes: [...current.excludedTypes] }
  return {
    ...selection,
    count: body.count ?? current.count,
    allowedCudaVersions: [...(body.allowedCudaVersions ?? current.allowedCudaVersions)],
    minCudaVersion:
      body.minCudaVersion === undefined
        ? current.minCudaVersion
        : body.minCudaVersion === ''
          ? null
          : body.minCudaVersion,
  }
}

/**
 * The cross-field GPU rules (400), on the resulting configuration of a create or PATCH:
 * R4 a non-empty allowedCudaVersions with a minCudaVersion; R7 pools that are no serverless pool,
 * exclusions outside the pools, and a selection with no type left.
 */
export function checkGpu(
  gpu: GpuConfig,
  pools: Pools,
  conflicts: Violations,
  maxCount: (typeId: string) => number = () => Infinity,
): void {
  checkCudaConflict(gpu, conflicts)
  const known = gpu.pools.filter((p) => pools.has(p))
  for (const [i, p] of gpu.pools.entries()) {
    if (!pools.has(p))
      conflicts.add(
        `gpu.pools[${i}]`,
        `${JSON.stringify(p)} is not a serverless GPU pool; pools are ${[...pools.keys()].join(', ')}`,
      )
  }
  // With an unknown pool the exclusions cannot be judged fairly; the pool error says what to fix first.
  if (known.length !== gpu.pools.length) return
  const inPools = new Set(known.flatMap((p) => pools.get(p) ?? []))
  for (const [i, t] of gpu.excludedTypes.entries()) {
    if (!inPools.has(t))
      conflicts.add(
        `gpu.excludedTypes[${i}]`,
        `${JSON.stringify(t)} is not a GPU type in pools ${gpu.pools.join(', ')}`,
      )
  }
  const selected = selectedGpuTypes(gpu, pools)
  if (selected.length === 0) {
    conflicts.add(
      'gpu.excludedTypes',
      `excludes every GPU type of pools ${gpu.pools.join(', ')}; at least one type must remain selected`,
    )
    return
  }
  // A worker's GPUs are of one type on one machine: a count no selected type offers would queue forever.
  const most = Math.max(...selected.map(maxCount))
  if (gpu.count > most)
    conflicts.add(
      'gpu.count',
      `${gpu.count} GPUs per worker is more than any selected GPU type offers (at most ${most})`,
    )
}

/** R4 (400), for endpoints and pods alike: a non-empty allowedCudaVersions together with a minCudaVersion. */
export function checkCudaConflict(
  gpu: { allowedCudaVersions: readonly string[]; minCudaVersion: string | null },
  conflicts: Violations,
): void {
  if (gpu.allowedCudaVersions.length > 0 && gpu.minCudaVersion !== null) {
    conflicts.add(
      'gpu.allowedCudaVersions',
      `${JSON.stringify(gpu.allowedCudaVersions)} cannot be combined with gpu.minCudaVersion ${JSON.stringify(gpu.minCudaVersion)}: use one or the other (allowedCudaVersions [] means any)`,
    )
  }
}

/** The GPU types a worker may be placed on, in pool order: the pools' types minus the exclusions. */
export function selectedGpuTypes(gpu: Pick<GpuConfig, 'pools' | 'excludedTypes'>, pools: Pools): string[] {
  const out: string[] = []
  for (const p of gpu.pools)
    for (const t of pools.get(p) ?? []) if (!gpu.excludedTypes.includes(t) && !out.includes(t)) out.push(t)
  return out
}
