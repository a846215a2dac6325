import type { CreatePod, UpdatePod } from '../../contract/pod.js'
import type { Template } from '../../contract/template.js'
import { checkVcpuValues, resolveCpu, type CpuFlavorView } from '../endpoints/endpointRulesCpu.js'
import { resolveContainer, type ContainerFields, type TemplateView } from '../endpoints/endpointRulesContainer.js'
import { checkCudaConflict } from '../endpoints/endpointRulesGpu.js'
import { Violations } from '../errors.js'
import type { PodRecord, PodSpec } from './pod.js'
import { createMounts, patchMounts, type VolumesView } from './podMounts.js'

/** Container disk of a pod created without a template and without `disk`, GB. */
export const DEFAULT_POD_DISK_GB = 20

/** What the pod rules read from a template: its container settings plus the pod-only parts. */
export type PodTemplateView = TemplateView & Pick<Template, 'mounts' | 'startSsh' | 'startJupyter'>

/** The catalog as the pod rules see it. */
export interface PodCatalogView {
  gpuType(id: string): { manufacturer: string; maxCount: number } | undefined
  cpuFlavor(id: string): CpuFlavorView | undefined
  dataCenter(id: string): { globalNetwork: boolean } | undefined
  /** Every data center id, for rules that apply when `dataCenterIds` is empty (= any). */
  dataCenterIds(): string[]
}

/** Everything besides the body the rules read; the service looks it up, nothing below does I/O. */
export interface PodRuleContext {
  catalog: PodCatalogView
  /** The caller's network volumes among those named. */
  volumes: VolumesView
  /** The caller's registry credential ids among those named. */
  registries: ReadonlySet<string>
  /** The template named by `templateId`, found and readable by the caller (else the service said 404). */
  template: PodTemplateView | null
  /** The account's SSH public keys (for `startSsh`). */
  sshKeys: readonly string[]
  /** A fresh password (for `startJupyter`). */
  newPassword: () => string
}

/** The pod to store, and nothing else: injected env is part of `env`. */
export type CreatedPodSpec = PodSpec

/**
 * The rules of POST /v2/pods, in two classes so one answer lists every violation of its class: values
 * that fail validation (422: a serverless template, no image, unreadable args, a vCPU count that is not a
 * power of two, udp ports) first, then conflicts between fields or with the catalog and the caller's
 * resources (400).
 */
export function createPodSpec(body: CreatePod, ctx: PodRuleContext): CreatedPodSpec {
  const invalid = new Violations()
  const conflicts = new Violations()
  const t = ctx.template
  if (t?.serverless)
    invalid.add('templateId', `template ${JSON.stringify(t.id)} is a serverless template, not a pod template`)
  if (body.cpu) checkVcpuValues([body.cpu], invalid, () => 'cpu')
  const container = resolveContainer(null, t, body, invalid, conflicts)
  checkPortValues(container.ports, invalid)
  invalid.throwIfAny('unprocessable')

  if (!body.gpu && !body.cpu) conflicts.add('$', 'exactly one of gpu or cpu must be set; neither was sent')
  if (body.gpu && body.cpu) conflicts.add('$', 'exactly one of gpu or cpu must be set; both were sent')
  let gpu: PodSpec['gpu'] = null
  if (body.gpu) {
    const seeded =
      body.gpu.allowedCudaVersions === undefined && body.gpu.minCudaVersion === undefined
        ? (t?.allowedCudaVersions ?? [])
        : []
    gpu = {
      id: body.gpu.id,
      count: body.gpu.count ?? 1,
      allowedCudaVersions: [...(body.gpu.allowedCudaVersions ?? seeded)],
      minCudaVersion: body.gpu.minCudaVersion ?? null,
    }
    checkGpuType(gpu, ctx.catalog, conflicts)
    checkCudaConflict(gpu, conflicts)
  }
  const cpu =
    body.cpu && !body.gpu
      ? (resolveCpu(
          [body.cpu],
          (id) => ctx.catalog.cpuFlavor(id),
          conflicts,
          () => 'cpu',
        )[0] ?? null)
      : null
  const dataCenterIds = [...(body.dataCenterIds ?? [])]
  checkDataCenters(dataCenterIds, ctx.catalog, conflicts)
  const mounts = createMounts(
    body.mounts,
    t?.mounts ?? null,
    !body.gpu && !!body.cpu,
    dataCenterIds,
    ctx.volumes,
    conflicts,
  )
  const globalNetworking = body.globalNetworking ?? false
  checkGlobalNetworking(globalNetworking, gpu, dataCenterIds, ctx.catalog, conflicts)
  checkContainerRefs(container, ctx.registries, conflicts)
  conflicts.throwIfAny('bad_request')

  const env = { ...container.env }
  // startSsh / startJupyter: the body's flag, else the template's; never stored or returned themselves.
  if ((body.startSsh ?? t?.startSsh ?? false) && env.PUBLIC_KEY === undefined && ctx.sshKeys.length > 0)
    env.PUBLIC_KEY = ctx.sshKeys.join('\n')
  if ((body.startJupyter ?? t?.startJupyter ?? false) && env.JUPYTER_PASSWORD === undefined)
    env.JUPYTER_PASSWORD = ctx.newPassword()
  return {
    ...container,
    env,
    disk: body.disk ?? t?.disk ?? DEFAULT_POD_DISK_GB,
    name: body.name,
    cloud: body.cloud ?? 'SECURE',
    dataCenterIds,
    globalNetworking,
    gpu,
    cpu,
    mounts,
    locked: false,
  }
}

/**
 * The rules of PATCH /v2/pods/{id}: `templateId` applies the template's container settings once (its env
 * merged under the body's, replacing the pod's; never its mount); the container settings follow the
 * endpoint rules; mounts follow the spec's PATCH rules; `locked` and `globalNetworking` are stored
 * (the latter applies at the next start).
 */
export function updatePodSpec(
  current: PodRecord,
  body: UpdatePod,
  ctx: Pick<PodRuleContext, 'catalog' | 'registries' | 'template'>,
): PodSpec {
  const invalid = new Violations()
  const conflicts = new Violations()
  const t = ctx.template
  if (t?.serverless)
    invalid.add('templateId', `template ${JSON.stringify(t.id)} is a serverless template, not a pod template`)
  const container = resolveContainer(current, t, body, invalid, conflicts)
  checkPortValues(container.ports, invalid)
  invalid.throwIfAny('unprocessable')
  const mounts = patchMounts(current.mounts, body.mounts, conflicts)
  const globalNetworking = body.globalNetworking ?? current.globalNetworking
  if (body.globalNetworking !== undefined)
    checkGlobalNetworking(globalNetworking, current.gpu, current.dataCenterIds, ctx.catalog, conflicts)
  checkContainerRefs(container, ctx.registries, conflicts)
  conflicts.throwIfAny('bad_request')
  return {
    ...container,
    // resolveContainer falls back to the endpoint default only when nothing says; a pod always has a disk.
    disk: body.disk ?? t?.disk ?? current.disk,
    name: body.name ?? current.name,
    cloud: current.cloud,
    dataCenterIds: current.dataCenterIds,
    globalNetworking,
    gpu: current.gpu,
    cpu: current.cpu,
    mounts,
    locked: body.locked ?? current.locked,
  }
}

/** True when a PATCH changes what runs (so a RUNNING pod is restarted to apply it). */
export function changesWhatRuns(before: PodSpec, after: PodSpec): boolean {
  const keys: Array<keyof PodSpec> = [
    'image',
    'args',
    'cmd',
    'entrypoint',
    'disk',
    'env',
    'ports',
    'registry',
    'mounts',
  ]
  return keys.some((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]))
}

/** Pods (and cluster members) expose `<port>/http` and `<port>/tcp` (the runtime maps only those), each port number once (422). */
export function checkPortValues(ports: readonly string[], invalid: Violations): void {
  const seen = new Map<string, number>()
  for (const [i, p] of ports.entries()) {
    const [num, proto] = p.split('/')
    if (proto !== 'http' && proto !== 'tcp')
      invalid.add(`ports[${i}]`, `${JSON.stringify(p)}: pods expose http or tcp ports`)
    else if (Number(num) < 1 || Number(num) > 65535)
      invalid.add(`ports[${i}]`, `${JSON.stringify(p)}: the port must be 1 to 65535`)
    else if (seen.has(num))
      invalid.add(`ports[${i}]`, `port ${num} is listed more than once (also ports[${seen.get(num)}])`)
    else seen.set(num, i)
  }
}

/** The GPU type exists and offers `count` GPUs on one machine (400, like an unknown pool on endpoints). */
function checkGpuType(gpu: { id: string; count: number }, catalog: PodCatalogView, conflicts: Violations): void {
  const type = catalog.gpuType(gpu.id)
  if (!type) conflicts.add('gpu.id', `${JSON.stringify(gpu.id)} is not a GPU type; see /v2/catalog/gpus`)
  else if (gpu.count > type.maxCount)
    conflicts.add('gpu.count', `${gpu.count} is more than ${gpu.id} offers per pod (at most ${type.maxCount})`)
}

export function checkDataCenters(ids: readonly string[], catalog: PodCatalogView, conflicts: Violations): void {
  for (const [i, dc] of ids.entries()) {
    if (!catalog.dataCenter(dc))
      conflicts.add(`dataCenterIds[${i}]`, `${JSON.stringify(dc)} is not a data center; see /v2/catalog/datacenters`)
  }
}

/** Global networking needs an NVIDIA GPU and at least one acceptable data center that offers it. */
function checkGlobalNetworking(
  enabled: boolean,
  gpu: { id: string } | null,
  dataCenterIds: readonly string[],
  catalog: PodCatalogView,
  conflicts: Violations,
): void {
  if (!enabled) return
  if (!gpu) conflicts.add('globalNetworking', 'needs an NVIDIA GPU pod; this is a CPU pod')
  else if (catalog.gpuType(gpu.id) && catalog.gpuType(gpu.id)!.manufacturer !== 'NVIDIA')
    conflicts.add('globalNetworking', `needs an NVIDIA GPU; ${gpu.id} is not one`)
  const candidates = dataCenterIds.length ? dataCenterIds : catalog.dataCenterIds()
  const eligible = candidates.filter((id) => catalog.dataCenter(id)?.globalNetwork)
  if (eligible.length === 0) {
    conflicts.add(
      'globalNetworking',
      `no ${dataCenterIds.length ? 'data center in dataCenterIds' : 'data center'} supports global networking (globalNetwork in /v2/catalog/datacenters)`,
    )
  }
}

export function checkContainerRefs(
  container: ContainerFields,
  registries: ReadonlySet<string>,
  conflicts: Violations,
): void {
  if (container.registry !== null && !registries.has(container.registry)) {
    conflicts.add(
      'registry',
      `${JSON.stringify(container.registry)} is not one of your container registry credentials; see /v2/registries`,
    )
  }
}
