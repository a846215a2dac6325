import type { CreateEndpoint, CpuCreate, UpdateEndpoint } from '../../contract/endpoint.js'
import type { EndpointRecord, EndpointSpec } from './endpoint.js'
import { checkVcpuValues, resolveCpu, type CpuFlavorView } from './endpointRulesCpu.js'
import { resolveContainer, type TemplateView } from './endpointRulesContainer.js'
import { checkGpu, createGpu, normalizeExcludedTypes, updateGpu, type Pools } from './endpointRulesGpu.js'
import { checkScaling, resolveWorkers } from './endpointRulesScaling.js'
import { Violations } from '../errors.js'

export type { TemplateView } from './endpointRulesContainer.js'

/** The catalog as the endpoint rules see it. */
export interface CatalogView {
  /** Serverless pool id -> its GPU type ids. */
  pools: Pools
  /** Most GPUs of a type one worker may have (the catalog's maxCount). */
  gpuMaxCount?: (typeId: string) => number
  cpuFlavor(id: string): CpuFlavorView | undefined
  hasDataCenter(id: string): boolean
}

/** The caller's resources that a body names (looked up by the service; anything absent is not theirs). */
export interface AccountView {
  /** The caller's network volumes among those named, by id. */
  volumes: ReadonlyMap<string, { dataCenter: string }>
  /** The caller's registry credential ids among those named. */
  registries: ReadonlySet<string>
}

/** Everything besides the body that the rules read; no I/O happens below this line. */
export interface RuleContext {
  catalog: CatalogView
  account: AccountView
  /** The template named by `templateId`, already found and readable by the caller (else the service said 404). */
  template: TemplateView | null
}

const CUDA_KEYS = ['allowedCudaVersions', 'minCudaVersion']

/**
 * R3: CUDA constraints with a CPU create are 422. Run on the raw body before schema validation, because
 * the schema alone would answer a `gpu` holding only CUDA fields with `gpu.pools: is required`, which
 * hides the actual mistake. Only that shape is caught here: a `gpu` with pools next to `cpu` is the R2
 * conflict (400), and CUDA fields at the top level or inside `cpu` items fail the closed schema (422).
 */
export function cudaOutsideGpu(body: unknown, what: 'endpoints' | 'pods' = 'endpoints'): string[] {
  if (!isObject(body) || body.cpu === undefined || !isObject(body.gpu)) return []
  const keys = Object.keys(body.gpu)
  if (keys.length === 0 || !keys.every((k) => CUDA_KEYS.includes(k))) return []
  return keys.map((k) => `gpu.${k}: CUDA constraints apply only to GPU ${what}, and this create sets cpu`)
}

/**
 * The rules of a create (R2-R13), in two classes so one answer lists every violation of its class:
 * values that fail validation (422: unreadable args, missing image, excludedTypes values, vCPU counts that
 * are not powers of two, a non-serverless template) first, then conflicts between fields or with the
 * catalog and the caller's resources (400). Returns the endpoint to store.
 */
export function createSpec(body: CreateEndpoint, ctx: RuleContext): EndpointSpec {
  const invalid = new Violations()
  const conflicts = new Violations()
  checkTemplate(ctx.template, invalid)
  const excludedTypes = normalizeExcludedTypes(body.gpu?.excludedTypes, 'gpu.excludedTypes', invalid)
  checkVcpuValues(body.cpu, invalid)
  const container = resolveContainer(null, ctx.template, body, invalid, conflicts)
  invalid.throwIfAny('unprocessable')

  if (!body.gpu && !body.cpu) conflicts.add('$', 'exactly one of gpu or cpu must be set; neither was sent')
  if (body.gpu && body.cpu) conflicts.add('$', 'exactly one of gpu or cpu must be set; both were sent')
  const gpu = body.gpu ? createGpu(body.gpu, excludedTypes, ctx.template?.allowedCudaVersions ?? null) : null
  if (gpu) checkGpu(gpu, ctx.catalog.pools, conflicts, ctx.catalog.gpuMaxCount)
  const cpu = body.cpu ? resolveCpu(body.cpu, (id) => ctx.catalog.cpuFlavor(id), conflicts) : undefined
  checkScaling(body.type, body.scaling, conflicts)
  const workers = resolveWorkers(null, body.workers, body.type, body.scaling, conflicts)
  const placement = { dataCenterIds: [...(body.dataCenterIds ?? [])], networkVolumes: [...(body.networkVolumes ?? [])] }
  checkReferences({ ...placement, registry: container.registry }, ctx, conflicts)
  conflicts.throwIfAny('bad_request')

  return {
    name: body.name,
    type: body.type,
    ...container,
    gpu,
    ...(cpu ? { cpu } : {}),
    workers,
    scaling: { ...body.scaling },
    ...placement,
    timeout: body.timeout ?? 300_000,
    flashboot: body.flashboot ?? 'OFF',
    templateId: ctx.template?.id ?? null,
  }
}

/**
 * The rules of a PATCH (R14): the body is applied to the stored endpoint and every create rule is checked
 * again on the result. `type` cannot change (the closed schema refuses it); `gpu` on a CPU endpoint and
 * `cpu` on a GPU one are 400; `cpu` replaces the whole list; `templateId` applies the template's container
 * settings once, as on pods (its CUDA versions are not re-seeded: the endpoint's GPU constraints stay
 * what they are unless `gpu` changes them).
 */
export function updateSpec(current: EndpointRecord, body: UpdateEndpoint, ctx: RuleContext): EndpointSpec {
  const invalid = new Violations()
  const conflicts = new Violations()
  checkTemplate(ctx.template, invalid)
  const excludedTypes =
    body.gpu?.excludedTypes === undefined
      ? undefined
      : normalizeExcludedTypes(body.gpu.excludedTypes, 'gpu.excludedTypes', invalid)
  checkVcpuValues(body.cpu, invalid)
  const container = resolveContainer(current, ctx.template, body, invalid, conflicts)
  invalid.throwIfAny('unprocessable')

  const isGpu = !!current.gpu
  if (!isGpu && body.gpu)
    conflicts.add('gpu', 'this is a CPU endpoint: it has cpu flavors and cannot take a gpu configuration')
  if (isGpu && body.cpu)
    conflicts.add('cpu', 'this is a GPU endpoint: it has a gpu configuration and cannot take cpu flavors')
  const gpu = current.gpu ? (body.gpu ? updateGpu(current.gpu, body.gpu, excludedTypes, conflicts) : current.gpu) : null
  if (gpu) checkGpu(gpu, ctx.catalog.pools, conflicts, ctx.catalog.gpuMaxCount)
  const cpuInput: CpuCreate[] | undefined = isGpu
    ? undefined
    : (body.cpu ?? current.cpu?.map(({ id, vcpuCount }) => ({ id, vcpuCount })))
  const cpu = cpuInput ? resolveCpu(cpuInput, (id) => ctx.catalog.cpuFlavor(id), conflicts) : undefined
  const scaling = body.scaling ?? current.scaling
  checkScaling(current.type, scaling, conflicts)
  const workers = resolveWorkers(current.workers, body.workers, current.type, scaling, conflicts)
  const placement = {
    dataCenterIds: [...(body.dataCenterIds ?? current.dataCenterIds)],
    networkVolumes: [...(body.networkVolumes ?? current.networkVolumes)],
  }
  checkReferences({ ...placement, registry: container.registry }, ctx, conflicts)
  conflicts.throwIfAny('bad_request')

  return {
    name: body.name ?? current.name,
    type: current.type,
    ...container,
    gpu,
    ...(cpu ? { cpu } : {}),
    workers,
    scaling: { ...scaling },
    ...placement,
    timeout: body.timeout ?? current.timeout,
    flashboot: body.flashboot ?? current.flashboot,
    templateId: ctx.template?.id ?? current.templateId,
  }
}

/** R6: only serverless templates make endpoints (a pod template is valid JSON, just the wrong kind: 422). */
function checkTemplate(template: TemplateView | null, invalid: Violations): void {
  if (template && !template.serverless)
    invalid.add('templateId', `template ${JSON.stringify(template.id)} is a pod template, not a serverless one`)
}

/**
 * R12 and R13 (400): the registry is one of the caller's credentials; data centers exist (empty lets the
 * scheduler choose); network volumes are the caller's. Two rules the spec leaves open, decided here because
 * a worker mounts the volume of the data center it runs in: with `dataCenterIds` set, each volume must be
 * in one of them (else no worker could mount it), and at most one volume per data center.
 */
function checkReferences(
  spec: { dataCenterIds: string[]; networkVolumes: string[]; registry: string | null },
  ctx: RuleContext,
  conflicts: Violations,
): void {
  if (spec.registry !== null && !ctx.account.registries.has(spec.registry)) {
    conflicts.add(
      'registry',
      `${JSON.stringify(spec.registry)} is not one of your container registry credentials; see /v2/registries`,
    )
  }
  for (const [i, dc] of spec.dataCenterIds.entries()) {
    if (!ctx.catalog.hasDataCenter(dc))
      conflicts.add(`dataCenterIds[${i}]`, `${JSON.stringify(dc)} is not a data center; see /v2/catalog/datacenters`)
  }
  const volumeOfDc = new Map<string, string>()
  for (const [i, id] of spec.networkVolumes.entries()) {
    const volume = ctx.account.volumes.get(id)
    if (!volume) {
      conflicts.add(
        `networkVolumes[${i}]`,
        `${JSON.stringify(id)} is not one of your network volumes; see /v2/network-volumes`,
      )
      continue
    }
    if (spec.dataCenterIds.length > 0 && !spec.dataCenterIds.includes(volume.dataCenter)) {
      conflicts.add(
        `networkVolumes[${i}]`,
        `volume ${JSON.stringify(id)} is in data center ${volume.dataCenter}, which dataCenterIds does not include`,
      )
    }
    const other = volumeOfDc.get(volume.dataCenter)
    if (other !== undefined)
      conflicts.add(
        `networkVolumes[${i}]`,
        `volume ${JSON.stringify(id)} is in data center ${volume.dataCenter} like ${JSON.stringify(other)}; a worker mounts one volume, the one in its data center`,
      )
    else volumeOfDc.set(volume.dataCenter, id)
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}
