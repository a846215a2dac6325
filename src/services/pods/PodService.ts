import { randomBytes } from 'node:crypto'
import { totalmem } from 'node:os'
import type { CatalogService } from '../../catalog/CatalogService.js'
import type { Allocation } from '../../catalog/Fleet.js'
import type { CreatePod, Pod, PodAction, PodStatus, UpdatePod } from '../../contract/pod.js'
import { iso, type Clock } from '../../domain/clock.js'
import { DomainError, notFound } from '../../domain/errors.js'
import { newId } from '../../domain/ids.js'
import { actionRefusal, newPodRecord, type PodRecord } from '../../domain/pods/pod.js'
import { nextPodStatus, podSourcesOf, type PodEvent } from '../../domain/pods/podState.js'
import { podPlacementRequest } from '../../domain/pods/podPlacement.js'
import {
  changesWhatRuns,
  createPodSpec,
  updatePodSpec,
  type PodCatalogView,
  type PodTemplateView,
} from '../../domain/pods/podRules.js'
import { toPod, type PodPrices } from '../../domain/pods/podView.js'
import type { WorkerLog } from '../../runtime/WorkerLog.js'
import type { Store } from '../../store/Store.js'
import type { Principal } from '../accounts/AccountService.js'
import type { Log } from '../log.js'
import type { NetworkVolumeService } from '../storage/NetworkVolumeService.js'
import type { PodEvents } from './PodEvents.js'
import { pullAuth } from '../storage/pullAuth.js'
import { PodRunner } from './PodRunner.js'
import type { RuntimeDriver, WorkloadExit } from '../../runtime/RuntimeDriver.js'
import type { RegistryService } from '../storage/RegistryService.js'
import type { SshKeyService } from '../accounts/SshKeyService.js'
import type { TemplateService } from '../endpoints/TemplateService.js'
import type { QuotaService } from '../accounts/QuotaService.js'

/** What PodService needs. */
export interface PodServiceDeps {
  store: Store
  clock: Clock
  catalog: CatalogService
  runtime: RuntimeDriver
  templates: Pick<TemplateService, 'resolveForAccount'>
  registries: Pick<RegistryService, 'exists' | 'credentials'>
  networkVolumes: Pick<NetworkVolumeService, 'get' | 'pathOf'>
  sshKeys: Pick<SshKeyService, 'keysOf'>
  events: PodEvents
  log: Log
  dataDir: string
  /** SIGTERM grace before a stopped pod's program is killed, ms. */
  stopGraceMs: number
  /** This installation's id (one per data dir), put on every pod workload's labels. */
  installationId: string
  /** Account quotas: pods, GPUs, spend limits (absent: none). */
  quotas?: Pick<QuotaService, 'admitPodCreate' | 'admitPodStart' | 'admitPods'>
}

/**
 * Pods: create/read/PATCH/delete, the actions, placement on the fleet ledger shared with serverless
 * workers, and the lifecycle of their programs (PodRunner) with every status change stored and emitted
 * (PodEvents). Operations on one pod run one at a time. Another account's pod is answered like a missing one.
 *
 * Lifecycle: create/start place the pod (PROVISIONING), then STARTING while the runtime starts it, RUNNING
 * once it runs. A program that ends by itself: exit 0 -> EXITED (capacity given back), anything else ->
 * ERROR (capacity kept, like a crashed machine still rented, until `start` or `terminate`).
 */
export class PodService {
  readonly runner: PodRunner
  private readonly queues = new Map<string, Promise<unknown>>()

  constructor(private readonly deps: PodServiceDeps) {
    this.runner = new PodRunner(
      {
        runtime: deps.runtime,
        dataDir: deps.dataDir,
        log: deps.log,
        stopGraceMs: deps.stopGraceMs,
        installationId: deps.installationId,
        pullAuth: (pod) => pullAuth(deps.registries, pod),
      },
      (podId, exit) => void this.serial(podId, () => this.exitedByItself(podId, exit)),
    )
  }

  async create(p: Principal, body: CreatePod): Promise<Pod> {
    const template =
      body.templateId === undefined
        ? null
        : ((await this.deps.templates.resolveForAccount(p.accountId, body.templateId)) as PodTemplateView)
    const volumeIds = (body.mounts?.network ?? []).map((m) => m.volumeId)
    const spec = createPodSpec(body, {
      catalog: this.catalogView(),
      volumes: await this.volumes(p.accountId, volumeIds),
      registries: await this.registries(p.accountId, [body.registry, template?.registry]),
      template,
      sshKeys: await this.deps.sshKeys.keysOf(p.accountId),
      newPassword: () => randomBytes(12).toString('base64url'),
    })
    const pod = newPodRecord(spec, { id: newId('pod_'), accountId: p.accountId, createdAt: iso(this.deps.clock.now()) })
    await this.deps.quotas?.admitPodCreate(p.accountId, pod.gpu?.count ?? 0)
    const allocation = await this.place(pod)
    try {
      // The pods quota decided in the transaction that inserts: racing creates cannot all pass the last pod.
      await this.deps.store.transaction(async (tx) => {
        await this.deps.quotas?.admitPods(tx, p.accountId, 1, 'pod create')
        await tx.pods.insert(pod)
      })
    } catch (err) {
      this.deps.catalog.fleet.release(pod.id)
      throw err
    }
    this.startCreated(pod, allocation)
    return this.view(pod)
  }

  /** A pod just stored as PROVISIONING on `allocation` (by create, or by a cluster's create): announce it and start it. */
  startCreated(pod: PodRecord, allocation: Allocation): void {
    this.emit(pod, null)
    this.runner.note(pod.id, `created; placed on host ${allocation.hostId} in ${allocation.dataCenterId}`)
    void this.serial(pod.id, () => this.launch(pod.id, allocation))
  }

  /** The response shape of a stored pod (for clusters listing their members). */
  viewOf(pod: PodRecord): Promise<Pod> {
    return this.view(pod)
  }

  /** The caller's pods, oldest first; cluster members only with `includeClusterPods`. */
  async list(p: Principal, includeClusterPods = false): Promise<Pod[]> {
    const pods = await this.deps.store.pods.list({ accountId: p.accountId, includeClusterPods })
    return Promise.all(pods.map((pod) => this.view(pod)))
  }

  /** Every pod of every account, as answered (for /metrics: counts by status, live use). */
  async all(): Promise<Pod[]> {
    const pods = await this.deps.store.pods.list({ includeClusterPods: true })
    return Promise.all(pods.map((pod) => this.view(pod)))
  }

  async get(p: Principal, id: string): Promise<Pod> {
    return this.view(await this.owned(p.accountId, id))
  }

  /**
   * PATCH. Name, `locked` and `globalNetworking` (next start) change nothing that runs. A change to what
   * runs (image, command, env, ports, disk, registry, mounts) is stored and, on a RUNNING pod, applied at
   * once by restarting it (the container disk is wiped, the persistent mount kept), as the reference
   * platform recreates the container; a locked RUNNING pod refuses such a change (409). Other statuses
   * apply it at their next start.
   */
  async update(p: Principal, id: string, body: UpdatePod): Promise<Pod> {
    const template =
      body.templateId === undefined
        ? null
        : ((await this.deps.templates.resolveForAccount(p.accountId, body.templateId)) as PodTemplateView)
    return this.serial(id, async () => {
      const current = await this.owned(p.accountId, id)
      this.assertStandalone(current, 'updated')
      const spec = updatePodSpec(current, body, {
        catalog: this.catalogView(),
        registries: await this.registries(p.accountId, [body.registry, template?.registry]),
        template,
      })
      const restart = current.status === 'RUNNING' && changesWhatRuns(current, spec)
      if (restart && spec.locked)
        throw new DomainError(
          'conflict',
          `pod ${id} is locked and RUNNING: applying this change would restart it; PATCH {"locked": false} first`,
        )
      const next: PodRecord = { ...current, ...spec }
      await this.deps.store.pods.update(next)
      if (restart) {
        this.runner.note(id, 'settings changed: restarting to apply them')
        await this.restartNow(next)
      }
      return this.view((await this.deps.store.pods.get(id)) ?? next)
    })
  }

  /** POST /v2/pods/{id}/action: 409 when the action is not valid now; `terminate` returns null (204). */
  async action(p: Principal, id: string, action: PodAction): Promise<Pod | null> {
    if (action === 'terminate') {
      await this.terminate(p, id)
      return null
    }
    return this.serial(id, async () => {
      const pod = await this.owned(p.accountId, id)
      this.assertStandalone(pod, action === 'stop' ? 'stopped' : action === 'start' ? 'started' : 'restarted')
      const refusal = actionRefusal(pod, action)
      if (refusal) throw new DomainError('conflict', refusal)
      if (action === 'stop') await this.stopNow(pod, 'stopped by request')
      else if (action === 'restart') await this.restartNow(pod)
      else await this.startNow(pod)
      return this.view((await this.deps.store.pods.get(id)) ?? pod)
    })
  }

  /** DELETE / terminate: stops the program, destroys the persistent mount, detaches a network volume, forgets the pod. */
  async terminate(p: Principal, id: string, opts: { cluster?: boolean } = {}): Promise<void> {
    await this.serial(id, async () => {
      const pod = await this.owned(p.accountId, id)
      if (!opts.cluster) this.assertStandalone(pod, 'terminated')
      const to = this.target(pod, 'terminate')
      await this.runner.stop(id, pod.runtimeRef, 0)
      this.deps.catalog.fleet.release(id)
      await this.runner.destroyMount(pod)
      const from = pod.status
      Object.assign(pod, { status: to, runtimeRef: null, portMappings: [] } satisfies Partial<PodRecord>)
      await this.deps.store.pods.delete(id)
      // After the delete, so that a log read racing it either sees no pod or gets a log ended here (see logs).
      this.runner.forget(id)
      this.emit(pod, from)
    })
  }

  /** The pod's log, for GET /v2/pods/{id}/logs. */
  async logs(p: Principal, id: string): Promise<WorkerLog> {
    await this.owned(p.accountId, id)
    const log = this.runner.logOf(id)
    // A terminate that forgot the pod between the read above and logOf left logOf to make its log anew, with
    // no one to end it: the follower would be kept open, and the log kept, for good.
    if (!(await this.deps.store.pods.get(id))) {
      this.runner.forget(id)
      throw notFound('pod', id)
    }
    return log
  }

  /** The host address and port of a RUNNING pod's HTTP port, for the proxy; 404/409 otherwise. */
  /** Why the pod is in ERROR (or was last), null when nothing failed. */
  async lastError(p: Principal, id: string): Promise<string | null> {
    return (await this.owned(p.accountId, id)).lastError
  }

  async httpTarget(p: Principal, id: string, port: number): Promise<{ ip: string; port: number }> {
    const pod = await this.owned(p.accountId, id)
    if (!pod.ports.includes(`${port}/http`)) throw notFound(`HTTP port ${port} of pod`, id)
    const m = pod.portMappings.find((x) => x.privatePort === port && x.protocol === 'http')
    if (pod.status !== 'RUNNING' || !m)
      throw new DomainError('conflict', `pod ${id} is ${pod.status}, not RUNNING: port ${port} is not served now`)
    return { ip: m.ip, port: m.publicPort }
  }

  /**
   * After a control-plane restart, before anyone calls: every pod holding capacity takes it back; a
   * program still running is adopted, one that is gone is started again (and the pod's log says so); an
   * ERROR pod stays ERROR. Programs no pod claims are removed. No pod is left RUNNING without a program.
   */
  async recover(): Promise<void> {
    const { store, catalog, log } = this.deps
    const pods = await store.pods.listHoldingCapacity()
    const keep = new Set<string>()
    const adopted = new Map<string, boolean>()
    for (const pod of pods) {
      if (!pod.runtimeRef) continue
      const w = pod.status === 'ERROR' ? null : await this.runner.adopt(pod.id, pod.runtimeRef)
      adopted.set(pod.id, !!w)
      if (w) keep.add(w.ref)
    }
    await this.runner.removeOrphans(keep)
    for (const pod of pods) {
      const allocation = pod.placement ? allocationOf(pod) : null
      // A pod whose workload was adopted holds its capacity, whatever this fleet now estimates.
      if (!allocation || !catalog.fleet.restore(allocation, { running: adopted.get(pod.id) === true })) {
        await this.runner.stop(pod.id, pod.runtimeRef, 0)
        await this.move(pod, 'fail', {
          runtimeRef: null,
          portMappings: [],
          lastError: 'its capacity was no longer available after a control-plane restart',
        })
        continue
      }
      if (pod.status === 'ERROR') continue
      if (adopted.get(pod.id)) {
        if (pod.status !== 'RUNNING') await this.move(pod, 'run', {})
        log.info({ podId: pod.id }, 'pod adopted after a restart')
        continue
      }
      const switched = pod.runtimeRef ? (this.deps.runtime.switched?.(pod.runtimeRef) ?? null) : null
      this.runner.note(
        pod.id,
        switched
          ? `the control plane restarted with another runtime: ${switched}, so its program was stopped: starting it again`
          : pod.runtimeRef
            ? 'the control plane restarted and the program was gone: starting it again'
            : 'the control plane restarted during the start: starting again',
      )
      await this.move(pod, 'place', { runtimeRef: null, portMappings: [] })
      void this.serial(pod.id, () => this.launch(pod.id, allocation))
    }
  }

  /** Shutdown: pods keep running (a restarted control plane adopts them); in-flight operations finish first. */
  async detach(): Promise<void> {
    await Promise.allSettled([...this.queues.values()])
    this.runner.detachAll()
  }

  /** Runs `fn` after every earlier operation on the same pod. */
  serial<T>(podId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.queues.get(podId) ?? Promise.resolve()
    const next = prev.then(fn, fn)
    // Only to order the next operation after this one: its failure goes to this call's caller through `next`.
    const settled = next.catch(() => {})
    this.queues.set(podId, settled)
    void settled.then(() => {
      if (this.queues.get(podId) === settled) this.queues.delete(podId)
    })
    return next
  }

  // ---- lifecycle steps (each runs inside serial) ----

  /** PROVISIONING -> STARTING -> RUNNING, or ERROR with the reason in the pod's log. */
  private async launch(podId: string, allocation: Allocation): Promise<void> {
    const pod = await this.deps.store.pods.get(podId)
    if (pod?.status !== 'PROVISIONING') return
    await this.move(pod, 'launch', {})
    try {
      const workload = await this.runner.start(pod, allocation, await this.volumePath(pod))
      await this.move(pod, 'run', {
        runtimeRef: workload.ref,
        portMappings: workload.ports.map((p) => ({ ...p })),
        startedAt: iso(this.deps.clock.now()),
        lastError: null,
      })
    } catch (err) {
      await this.move(pod, 'fail', { runtimeRef: null, portMappings: [], lastError: (err as Error).message })
    }
  }

  private async startNow(pod: PodRecord): Promise<void> {
    const allocation = this.deps.catalog.fleet.allocation(pod.id) ?? (await this.place(pod))
    await this.move(pod, 'place', { lastError: null })
    this.runner.note(pod.id, `starting on host ${allocation.hostId}`)
    void this.serial(pod.id, () => this.launch(pod.id, allocation))
  }

  private async stopNow(pod: PodRecord, why: string): Promise<void> {
    await this.runner.stop(pod.id, pod.runtimeRef)
    this.deps.catalog.fleet.release(pod.id)
    this.runner.note(pod.id, why)
    await this.move(pod, 'stop', { runtimeRef: null, portMappings: [] })
  }

  /** Restarts in place: same capacity, a fresh container disk, the same persistent mount. */
  private async restartNow(pod: PodRecord): Promise<void> {
    await this.runner.stop(pod.id, pod.runtimeRef)
    this.runner.note(pod.id, 'restarting')
    const allocation = this.deps.catalog.fleet.allocation(pod.id) ?? (await this.place(pod))
    await this.move(pod, 'place', { runtimeRef: null, portMappings: [] })
    void this.serial(pod.id, () => this.launch(pod.id, allocation))
  }

  /** The program ended without being asked: exit 0 -> EXITED (capacity back), else ERROR (capacity kept). */
  private async exitedByItself(podId: string, exit: WorkloadExit): Promise<void> {
    const pod = await this.deps.store.pods.get(podId)
    if (pod?.status !== 'RUNNING') return
    const how = exit.reason ?? (exit.signal ? `killed by signal ${exit.signal}` : `exit code ${exit.code}`)
    // The program is gone; what remains of it (its container disk) goes too. A remove that fails leaves that
    // behind (said here, once); the pod still moves on, as its program ended either way.
    const ref = pod.runtimeRef
    if (ref)
      await this.deps.runtime
        .remove(ref)
        .catch((err: unknown) =>
          this.deps.log.warn(
            { podId, ref, err: err instanceof Error ? err.message : String(err) },
            'cannot remove what remains of a pod whose program ended by itself',
          ),
        )
    if (exit.code === 0) {
      this.deps.catalog.fleet.release(podId)
      this.runner.note(podId, 'the program ended by itself (exit code 0): EXITED')
      await this.move(pod, 'exit', { runtimeRef: null, portMappings: [] })
    } else {
      this.runner.note(podId, `the program failed (${how}): ERROR`)
      await this.move(pod, 'fail', { runtimeRef: null, portMappings: [], lastError: `the program failed (${how})` })
    }
  }

  // ---- helpers ----

  /** Takes capacity for the pod; a 400 naming the type or flavor and what is free when there is none. */
  private async place(pod: PodRecord): Promise<Allocation> {
    const { catalog } = this.deps
    const volumeId = pod.mounts.network?.[0]?.volumeId
    const volumeDataCenter = volumeId ? (await this.deps.networkVolumes.get(pod.accountId, volumeId)).dataCenter : null
    const globalNetworkDataCenters = catalog.dataCenters.filter((d) => d.globalNetwork).map((d) => d.id)
    const req = podPlacementRequest(pod, { globalNetworkDataCenters, volumeDataCenter })
    // A quota refusal is a 403 naming the quota, before the fleet would refuse it as capacity.
    this.deps.quotas?.admitPodStart(pod.accountId, pod.gpu?.count ?? 0)
    const result =
      'reason' in req
        ? req
        : pod.cloud === 'COMMUNITY'
          ? { reason: 'this fleet has no COMMUNITY cloud hosts (every host is SECURE)' }
          : catalog.fleet.reserve(pod.id, req)
    if ('reason' in result) {
      const what = pod.gpu
        ? `${pod.gpu.count} x ${pod.gpu.id}`
        : `${pod.cpu!.id} with ${pod.cpu!.vcpuCount} vCPUs and ${pod.cpu!.memory} GB`
      const dcs = 'reason' in req ? undefined : req.dataCenterIds
      const free = pod.gpu
        ? `${catalog.fleet.gpuStock(pod.gpu.id, { dataCenterIds: dcs }).free} of ${catalog.fleet.gpuStock(pod.gpu.id, { dataCenterIds: dcs }).total} ${pod.gpu.id} GPUs are free`
        : `${catalog.fleet.cpuStock(pod.cpu!.vcpuCount, pod.cpu!.memory / pod.cpu!.vcpuCount, dcs).freeVcpu} vCPUs are free`
      const line = `${pod.gpu ? 'gpu' : 'cpu'}: no capacity for ${what}: ${result.reason}; ${free}`
      throw new DomainError('bad_request', line, [line])
    }
    pod.placement = {
      hostId: result.hostId,
      dataCenterId: result.dataCenterId,
      gpuIndices: [...result.gpuIndices],
      cudaVersion: result.cudaVersion,
      virtual: result.virtual,
    }
    return result
  }

  /** The status `event` moves the pod to; a move the table (domain/pods/podState.ts) does not allow is refused. */
  private target(pod: PodRecord, event: PodEvent): PodStatus {
    const to = nextPodStatus(pod.status, event)
    if (!to)
      throw new DomainError(
        'conflict',
        `pod ${pod.id} is ${pod.status}: "${event}" moves a pod only from ${podSourcesOf(event).join(', ')}`,
      )
    return to
  }

  /** The only writer of a stored pod's status: applies `event` (refused when illegal) and `patch`, stores, notes and emits. */
  private async move(pod: PodRecord, event: PodEvent, patch: Partial<Omit<PodRecord, 'status'>>): Promise<void> {
    const to = this.target(pod, event)
    const from = pod.status
    Object.assign(pod, patch, { status: to })
    await this.deps.store.pods.update(pod)
    if (from !== to) {
      this.runner.note(pod.id, `status ${from} -> ${to}${to === 'ERROR' && pod.lastError ? `: ${pod.lastError}` : ''}`)
      this.emit(pod, from)
    }
  }

  private emit(pod: PodRecord, from: PodStatus | null): void {
    this.deps.events.emit({ pod: structuredClone(pod), from, to: pod.status, at: iso(this.deps.clock.now()) })
  }

  private async view(pod: PodRecord): Promise<Pod> {
    const live = pod.status === 'RUNNING' ? this.runner.usage(pod.id) : null
    return toPod(pod, { prices: this.prices(pod), now: this.deps.clock.now(), live, hostMemoryBytes: totalmem() })
  }

  private prices(pod: PodRecord): PodPrices {
    const { catalog } = this.deps
    const gpu = pod.gpu ? catalog.gpuType(pod.gpu.id)?.price : undefined
    return {
      gpu: gpu ? (pod.cloud === 'COMMUNITY' ? gpu.community : gpu.secure) : undefined,
      perVcpu: pod.cpu ? catalog.cpuFlavor(pod.cpu.id)?.price.securePerVcpu : undefined,
    }
  }

  private async owned(accountId: string, id: string): Promise<PodRecord> {
    const pod = await this.deps.store.pods.get(id)
    if (!pod || pod.accountId !== accountId) throw notFound('pod', id)
    return pod
  }

  /** Cluster members are managed only through /v2/clusters. */
  private assertStandalone(pod: PodRecord, verb: string): void {
    if (pod.cluster)
      throw new DomainError(
        'conflict',
        `pod ${pod.id} belongs to cluster ${pod.cluster.id} and cannot be ${verb} on its own; use /v2/clusters/${pod.cluster.id}`,
      )
  }

  private async volumePath(pod: PodRecord): Promise<string | null> {
    const volumeId = pod.mounts.network?.[0]?.volumeId
    if (!volumeId) return null
    const volume = await this.deps.networkVolumes.get(pod.accountId, volumeId)
    return this.deps.networkVolumes.pathOf(volume)
  }

  private async volumes(accountId: string, ids: readonly string[]): Promise<Map<string, { dataCenter: string }>> {
    const out = new Map<string, { dataCenter: string }>()
    for (const id of new Set(ids)) {
      try {
        out.set(id, { dataCenter: (await this.deps.networkVolumes.get(accountId, id)).dataCenter })
      } catch (err) {
        if (!(err instanceof DomainError && err.kind === 'not_found')) throw err
      }
    }
    return out
  }

  private async registries(accountId: string, ids: ReadonlyArray<string | null | undefined>): Promise<Set<string>> {
    const out = new Set<string>()
    for (const id of new Set(ids)) if (id && (await this.deps.registries.exists(accountId, id))) out.add(id)
    return out
  }

  private catalogView(): PodCatalogView {
    return podCatalogView(this.deps.catalog)
  }
}

/** The fleet allocation a placed pod holds (to take it back after a restart). */
function allocationOf(pod: PodRecord): Allocation {
  const p = pod.placement!
  return {
    id: pod.id,
    hostId: p.hostId,
    dataCenterId: p.dataCenterId,
    gpuTypeId: pod.gpu?.id ?? null,
    gpuIndices: [...p.gpuIndices],
    cudaVersion: p.cudaVersion,
    virtual: p.virtual,
    cpuFlavorId: pod.cpu?.id ?? null,
    vcpus: pod.cpu?.vcpuCount ?? 0,
    memoryGb: pod.cpu?.memory ?? 0,
    owner: { accountId: pod.accountId, kind: 'pod' },
  }
}

/** What the pod and cluster rules read of the catalog. */
export function podCatalogView(catalog: CatalogService): PodCatalogView {
  return {
    gpuType: (id) => {
      const g = catalog.gpuType(id)
      return g ? { manufacturer: g.manufacturer, maxCount: g.maxCount ?? 8 } : undefined
    },
    cpuFlavor: (id) => catalog.cpuFlavor(id),
    dataCenter: (id) => catalog.dataCenter(id),
    dataCenterIds: () => catalog.dataCenters.map((d) => d.id),
  }
}
