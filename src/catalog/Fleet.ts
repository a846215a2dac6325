import type { Availability } from '../contract/catalog.js'
import { compareCuda } from '../domain/cuda.js'

/** One GPU model on a host; `indices` are device numbers for CUDA_VISIBLE_DEVICES. */
export interface HostGpus {
  typeId: string
  cudaVersion: string | null
  virtual: boolean
  indices: number[]
}

/** A machine work can be placed on. */
export interface Host {
  id: string
  dataCenterId: string
  vcpus: number
  memoryGb: number
  gpus: HostGpus[]
}

/** What one worker needs; options are tried in order, the first that fits wins. */
export interface PlacementRequest {
  /** Acceptable data centers; empty means any. */
  dataCenterIds: string[]
  gpu?: {
    /** Candidate GPU types in preference order (pools expanded, exclusions removed). */
    typeIds: string[]
    count: number
    allowedCudaVersions: string[]
    minCudaVersion: string | null
  }
  /** CPU options in preference order. */
  cpu?: Array<{ flavorId: string; vcpus: number; memoryGb: number }>
  /** Tried first (a pod started again goes back to its host when it can). */
  preferHostId?: string
  /** Only this host (a pod whose persistent disk lives there). */
  onlyHostId?: string
  /** Whose work it is: counted against the account's quotas (see `setAdmission`). */
  owner?: AllocationOwner
}

/** The account (and kind of work) an allocation is held for. */
export interface AllocationOwner {
  accountId: string
  kind: 'worker' | 'pod'
}

/**
 * Asked before capacity is taken for an owner: a reason to refuse (a quota it would pass), or null. `held` is
 * what the account holds now, counted in this ledger, which only the leader keeps: quotas are counted where
 * placement is decided, never per replica.
 */
export type Admission = (owner: AllocationOwner, gpus: number, held: { gpus: number; workers: number }) => string | null

/** Capacity taken by one placed worker (or pod); give it back with `Fleet.release`. */
export interface Allocation {
  id: string
  hostId: string
  dataCenterId: string
  gpuTypeId: string | null
  gpuIndices: number[]
  cudaVersion: string | null
  virtual: boolean
  cpuFlavorId: string | null
  vcpus: number
  memoryGb: number
  /** Whose work it is (absent on allocations made before owners were recorded). */
  owner?: AllocationOwner
}

/** Why nothing fits, for users wondering why a job waits. */
export interface PlacementFailure {
  reason: string
}

/**
 * The capacity ledger: the hosts Hangar may place work on and what is taken. It is the single place the
 * catalog's stock is read from, so stock shrinks as soon as work is placed.
 */
export class Fleet {
  private readonly allocations = new Map<string, Allocation>()
  private readonly usedGpu = new Map<string, Set<number>>() // `${hostId}\0${typeId}` -> busy indices
  private readonly usedCpu = new Map<string, { vcpus: number; memoryGb: number }>()
  private readonly down = new Map<string, string>()
  private admission: Admission | null = null

  constructor(readonly hosts: readonly Host[]) {}

  /** Free and total GPUs of a type, optionally in some data centers and on hosts matching a CUDA filter. */
  gpuStock(
    typeId: string,
    filter: { dataCenterIds?: string[]; cuda?: (v: string | null) => boolean } = {},
  ): { total: number; free: number; perHostFree: number[] } {
    let total = 0
    let free = 0
    const perHostFree: number[] = []
    for (const host of this.hostsIn(filter.dataCenterIds)) {
      for (const g of host.gpus) {
        if (g.typeId !== typeId || (filter.cuda && !filter.cuda(g.cudaVersion))) continue
        const busy = this.usedGpu.get(key(host.id, typeId))?.size ?? 0
        total += g.indices.length
        free += g.indices.length - busy
        perHostFree.push(g.indices.length - busy)
      }
    }
    return { total, free, perHostFree }
  }

  /** Free and total vCPUs, and how many workers of `vcpus` x `ramGbPerVcpu` would still fit. */
  cpuStock(
    vcpus: number,
    ramGbPerVcpu: number,
    dataCenterIds?: string[],
  ): { totalVcpu: number; freeVcpu: number; fits: number } {
    let totalVcpu = 0
    let freeVcpu = 0
    let fits = 0
    for (const host of this.hostsIn(dataCenterIds)) {
      const used = this.usedCpu.get(host.id) ?? { vcpus: 0, memoryGb: 0 }
      const fv = host.vcpus - used.vcpus
      const fm = host.memoryGb - used.memoryGb
      totalVcpu += host.vcpus
      freeVcpu += fv
      fits += Math.max(0, Math.min(Math.floor(fv / vcpus), Math.floor(fm / (vcpus * ramGbPerVcpu))))
    }
    return { totalVcpu, freeVcpu, fits }
  }

  /** Data centers that have at least one host. */
  dataCenterIds(): string[] {
    return [...new Set(this.hosts.map((h) => h.dataCenterId))]
  }

  /** CUDA versions reported by hosts carrying a GPU type. */
  cudaVersionsOf(typeId: string): string[] {
    const versions = new Set<string>()
    for (const h of this.hosts)
      for (const g of h.gpus) if (g.typeId === typeId && g.cudaVersion) versions.add(g.cudaVersion)
    return [...versions].sort(compareCuda)
  }

  /** Sets the check every reservation with an owner passes first (the quotas); null removes it. */
  setAdmission(admission: Admission | null): void {
    this.admission = admission
  }

  /** GPUs and workers an account's allocations hold now. */
  heldBy(accountId: string): { gpus: number; workers: number } {
    let gpus = 0
    let workers = 0
    for (const a of this.allocations.values()) {
      if (a.owner?.accountId !== accountId) continue
      gpus += a.gpuIndices.length
      if (a.owner.kind === 'worker') workers++
    }
    return { gpus, workers }
  }

  /** Every allocation held now. */
  allocationsHeld(): Allocation[] {
    return [...this.allocations.values()]
  }

  /** Takes capacity for one worker, trying each option in order; a failure says why nothing fits. */
  reserve(id: string, req: PlacementRequest): Allocation | PlacementFailure {
    if (req.owner && this.admission) {
      const refused = this.admission(req.owner, req.gpu?.count ?? 0, this.heldBy(req.owner.accountId))
      if (refused !== null) return { reason: refused }
    }
    const owner = req.owner ? { owner: req.owner } : {}
    const hosts = [...this.hostsIn(req.dataCenterIds)].filter(
      (h) => req.onlyHostId === undefined || h.id === req.onlyHostId,
    )
    if (req.preferHostId !== undefined)
      hosts.sort((a, b) => Number(b.id === req.preferHostId) - Number(a.id === req.preferHostId))
    if (hosts.length === 0 && this.down.size > 0)
      return {
        reason: `no host is up${req.dataCenterIds.length ? ` in data centers ${req.dataCenterIds.join(', ')}` : ''} (down: ${[...this.down].map(([h, why]) => `${h}: ${why}`).join('; ')})`,
      }
    if (hosts.length === 0)
      return {
        reason:
          req.onlyHostId !== undefined
            ? `host ${req.onlyHostId} is not in the fleet${req.dataCenterIds.length ? ` in data centers ${req.dataCenterIds.join(', ')}` : ''}`
            : `no host in data centers ${req.dataCenterIds.join(', ')}`,
      }
    if (req.gpu) {
      const { typeIds, count, allowedCudaVersions, minCudaVersion } = req.gpu
      const cudaOk = cudaFilter(allowedCudaVersions, minCudaVersion)
      let sawType = false
      let sawCuda = false
      let most = 0
      const versions = new Set<string>()
      for (const typeId of typeIds) {
        for (const host of hosts) {
          for (const g of host.gpus) {
            if (g.typeId !== typeId) continue
            sawType = true
            if (g.cudaVersion) versions.add(g.cudaVersion)
            if (!cudaOk(g.cudaVersion)) continue
            sawCuda = true
            most = Math.max(most, g.indices.length)
            const busy = this.usedGpu.get(key(host.id, typeId)) ?? new Set<number>()
            const freeIdx = g.indices.filter((i) => !busy.has(i))
            if (freeIdx.length < count) continue
            const taken = freeIdx.slice(0, count)
            for (const i of taken) busy.add(i)
            this.usedGpu.set(key(host.id, typeId), busy)
            return this.remember({
              id,
              hostId: host.id,
              dataCenterId: host.dataCenterId,
              gpuTypeId: typeId,
              gpuIndices: taken,
              cudaVersion: g.cudaVersion,
              virtual: g.virtual,
              cpuFlavorId: null,
              vcpus: 0,
              memoryGb: 0,
              ...owner,
            })
          }
        }
      }
      const types = `the selected GPU types (${typeIds.join(', ')})`
      const where = req.dataCenterIds.length ? ` in data centers ${req.dataCenterIds.join(', ')}` : ''
      if (!sawType) return { reason: `no host${where} has any of ${types}` }
      if (!sawCuda) {
        const wanted = allowedCudaVersions.length
          ? `CUDA ${allowedCudaVersions.join(' or ')}`
          : `CUDA ${minCudaVersion} or newer`
        return {
          reason: `no host${where} with ${types} has ${wanted} (they have ${[...versions].sort(compareCuda).join(', ') || 'no CUDA version'})`,
        }
      }
      if (most < count) return { reason: `no host${where} has ${count} GPUs of one of ${types}: at most ${most}` }
      return { reason: `all ${count > 1 ? `sets of ${count} ` : ''}GPUs of ${types}${where} are in use` }
    }
    for (const opt of req.cpu ?? []) {
      for (const host of hosts) {
        const used = this.usedCpu.get(host.id) ?? { vcpus: 0, memoryGb: 0 }
        if (host.vcpus - used.vcpus < opt.vcpus || host.memoryGb - used.memoryGb < opt.memoryGb) continue
        this.usedCpu.set(host.id, { vcpus: used.vcpus + opt.vcpus, memoryGb: used.memoryGb + opt.memoryGb })
        return this.remember({
          id,
          hostId: host.id,
          dataCenterId: host.dataCenterId,
          gpuTypeId: null,
          gpuIndices: [],
          cudaVersion: null,
          virtual: false,
          cpuFlavorId: opt.flavorId,
          vcpus: opt.vcpus,
          memoryGb: opt.memoryGb,
          ...owner,
        })
      }
    }
    const configs = (req.cpu ?? []).map((o) => `${o.flavorId} ${o.vcpus} vCPU/${o.memoryGb} GB`).join(', ')
    return {
      reason: `no host${req.dataCenterIds.length ? ` in data centers ${req.dataCenterIds.join(', ')}` : ''} has enough free vCPUs and memory for any of the CPU configurations (${configs})`,
    }
  }

  /**
   * Takes exactly `a` again (a worker adopted after a restart keeps its host and devices); false when that
   * capacity is taken, its host gone or down.
   *
   * With `running`, the workload was found running and so holds its capacity whatever this fleet now estimates:
   * it is counted even beyond the host's vCPUs and memory, on a host missing from the estimate or marked down
   * (a Kubernetes host read while its Node was NotReady, a host whose configured size shrank), and on GPU
   * indices the estimate no longer lists. Only a GPU another allocation holds refuses it: two workloads cannot
   * both own one device.
   */
  restore(a: Allocation, opts: { running?: boolean } = {}): boolean {
    if (this.allocations.has(a.id)) return false
    const host = this.hosts.find((h) => h.id === a.hostId)
    if (!opts.running && (!host || this.down.has(host.id))) return false
    if (a.gpuTypeId) {
      const g = host?.gpus.find((x) => x.typeId === a.gpuTypeId)
      const busy = this.usedGpu.get(key(a.hostId, a.gpuTypeId)) ?? new Set<number>()
      if (a.gpuIndices.some((i) => busy.has(i))) return false
      if (!opts.running && (!g || a.gpuIndices.some((i) => !g.indices.includes(i)))) return false
      for (const i of a.gpuIndices) busy.add(i)
      this.usedGpu.set(key(a.hostId, a.gpuTypeId), busy)
    }
    if (a.vcpus || a.memoryGb) {
      const used = this.usedCpu.get(a.hostId) ?? { vcpus: 0, memoryGb: 0 }
      const fits = host && host.vcpus - used.vcpus >= a.vcpus && host.memoryGb - used.memoryGb >= a.memoryGb
      if (!fits && !opts.running) return false
      this.usedCpu.set(a.hostId, { vcpus: used.vcpus + a.vcpus, memoryGb: used.memoryGb + a.memoryGb })
    }
    this.remember(a)
    return true
  }

  /** Marks a host down (nothing is placed there, its stock is not offered) with why, or up again with null. */
  setDown(hostId: string, reason: string | null): void {
    if (reason === null) this.down.delete(hostId)
    else this.down.set(hostId, reason)
  }

  /** Why a host is down, or null when it is up. */
  downReason(hostId: string): string | null {
    return this.down.get(hostId) ?? null
  }

  /** The allocation held under `id`, if any. */
  allocation(id: string): Allocation | undefined {
    return this.allocations.get(id)
  }

  /** Gives capacity back; unknown ids are ignored so release is idempotent. */
  release(id: string): void {
    const a = this.allocations.get(id)
    if (!a) return
    this.allocations.delete(id)
    if (a.gpuTypeId) {
      const busy = this.usedGpu.get(key(a.hostId, a.gpuTypeId))
      for (const i of a.gpuIndices) busy?.delete(i)
    }
    if (a.vcpus || a.memoryGb) {
      const used = this.usedCpu.get(a.hostId)
      if (used) this.usedCpu.set(a.hostId, { vcpus: used.vcpus - a.vcpus, memoryGb: used.memoryGb - a.memoryGb })
    }
  }

  private remember(a: Allocation): Allocation {
    this.allocations.set(a.id, a)
    return a
  }

  private *hostsIn(dataCenterIds?: string[]): Iterable<Host> {
    for (const h of this.hosts)
      if (!this.down.has(h.id) && (!dataCenterIds?.length || dataCenterIds.includes(h.dataCenterId))) yield h
  }
}

/** A predicate for host CUDA versions: one of a list, or a floor (both compared numerically: 12.11 > 12.2), or anything. */
export function cudaFilter(allowed: string[], min: string | null): (v: string | null) => boolean {
  if (allowed.length > 0) return (v) => v !== null && allowed.some((a) => compareCuda(v, a) === 0)
  if (min) return (v) => v !== null && compareCuda(v, min) >= 0
  return () => true
}

/** Maps how many more units fit to the catalog's coarse availability levels. */
export function availabilityLevel(fits: number): Availability {
  if (fits <= 0) return 'NONE'
  if (fits <= 2) return 'LOW'
  if (fits <= 7) return 'MEDIUM'
  return 'HIGH'
}

const key = (hostId: string, typeId: string) => `${hostId}\0${typeId}`
