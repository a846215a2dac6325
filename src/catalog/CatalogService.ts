import {
  Compliance,
  NetworkVolumeType,
  Region,
  type CpuFlavor,
  type CpuQuery,
  type DataCenter,
  type DataCenterQuery,
  type GpuQuery,
  type GpuType,
} from '../contract/catalog.js'
import { DomainError, notFound, Violations } from '../domain/errors.js'
import type { CatalogConfig, CpuFlavorSpec, DataCenterSpec, FleetConfig, GpuTypeSpec } from './config.js'
import { DEFAULT_CPUS, DEFAULT_GPUS, DEFAULT_VIRTUAL_GPUS, defaultDataCenters } from './defaults.js'
import type { MachineInfo } from './detect.js'
import { availabilityLevel, cudaFilter, Fleet, type Host } from './Fleet.js'

/**
 * The catalog of GPU types, CPU flavors and data centers, with stock read from the fleet.
 * Built once at start from the built-in catalog, the config file and what this machine has.
 */
export class CatalogService {
  readonly gpus: readonly GpuTypeSpec[]
  readonly cpus: readonly CpuFlavorSpec[]
  readonly dataCenters: readonly DataCenterSpec[]
  private readonly gpuById: Map<string, GpuTypeSpec>
  private readonly cpuById: Map<string, CpuFlavorSpec>
  private readonly dcById: Map<string, DataCenterSpec>

  constructor(
    catalog: CatalogConfig,
    fleetConfig: FleetConfig,
    machine: MachineInfo,
    /** Set when hosts are configured explicitly; otherwise this machine is the fleet. */
    readonly fleet: Fleet = new Fleet(localHosts(fleetConfig, machine)),
  ) {
    const base = catalog.mode === 'replace'
    this.gpus = merge(base ? [] : DEFAULT_GPUS, catalog.gpus)
    this.cpus = merge(base ? [] : DEFAULT_CPUS, catalog.cpus)
    this.dataCenters = merge(base ? [] : defaultDataCenters(fleetConfig.localDataCenterId), catalog.dataCenters)
    // A real GPU whose model the catalog does not know is still offered for pods, outside any serverless pool.
    const known = new Set(this.gpus.map((g) => g.id))
    const unknown = [...new Set(this.fleet.hosts.flatMap((h) => h.gpus.map((g) => g.typeId)))].filter(
      (t) => !known.has(t),
    )
    this.gpus = [
      ...this.gpus,
      ...unknown.map(
        (id): GpuTypeSpec => ({
          id,
          name: id,
          pool: null,
          manufacturer: id.startsWith('AMD') ? 'AMD' : id.startsWith('NVIDIA') ? 'NVIDIA' : 'UNKNOWN',
          memory: 1,
          price: { secure: 0, community: 0 },
          maxCount: 8,
        }),
      ),
    ]
    this.gpuById = new Map(this.gpus.map((g) => [g.id, g]))
    this.cpuById = new Map(this.cpus.map((c) => [c.id, c]))
    this.dcById = new Map(this.dataCenters.map((d) => [d.id, d]))
    const missing = this.fleet.hosts
      .filter((h) => !this.dcById.has(h.dataCenterId))
      .map((h) => `${h.id} -> ${h.dataCenterId}`)
    if (missing.length) throw new Error(`fleet hosts name data centers missing from the catalog: ${missing.join(', ')}`)
  }

  gpuType(id: string): GpuTypeSpec | undefined {
    return this.gpuById.get(id)
  }
  cpuFlavor(id: string): CpuFlavorSpec | undefined {
    return this.cpuById.get(id)
  }
  dataCenter(id: string): DataCenterSpec | undefined {
    return this.dcById.get(id)
  }
  /** Serverless pool ids, each with the GPU types in it. */
  pools(): Map<string, string[]> {
    const pools = new Map<string, string[]>()
    for (const g of this.gpus) if (g.pool) pools.set(g.pool, [...(pools.get(g.pool) ?? []), g.id])
    return pools
  }
  /** True when the fleet has virtual GPUs (no real GPU was found). */
  hasVirtualGpus(): boolean {
    return this.fleet.hosts.some((h) => h.gpus.some((g) => g.virtual))
  }

  listGpus(q: GpuQuery): GpuType[] {
    const opts = gpuOptions(q)
    let specs = this.gpus
    if (opts?.countryCodes) {
      const dcs = this.dataCenters
        .filter((d) => d.countryCode && opts.countryCodes!.includes(d.countryCode))
        .map((d) => d.id)
      specs = specs.filter((g) => this.fleet.gpuStock(g.id, { dataCenterIds: dcs }).total > 0 && dcs.length > 0)
    }
    return specs.map((g) => this.gpuView(g, opts))
  }

  getGpu(id: string, q: GpuQuery): GpuType {
    const g = this.gpuById.get(id)
    if (!g) throw notFound('GPU type', id)
    return this.gpuView(g, gpuOptions(q))
  }

  listCpus(q: CpuQuery): CpuFlavor[] {
    const opts = cpuOptions(q)
    return this.cpus.map((c) => this.cpuView(c, opts))
  }

  getCpu(id: string, q: CpuQuery): CpuFlavor {
    const c = this.cpuById.get(id)
    if (!c) throw notFound('CPU flavor', id)
    return this.cpuView(c, cpuOptions(q))
  }

  listDataCenters(q: DataCenterQuery): DataCenter[] {
    const include = dcInclude(q.include)
    const regions = csv(q.regions)
    const types = csv(q.networkVolumeTypes)
    const compliance = csv(q.compliance)
    const malformed = new Violations()
    for (const [name, values, allowed] of [
      ['regions', regions, Region.enum],
      ['networkVolumeTypes', types, NetworkVolumeType.enum],
      ['compliance', compliance, Compliance.enum],
    ] as const) {
      const unknown = (values ?? []).filter((v) => !(allowed as readonly string[]).includes(v))
      if (unknown.length)
        malformed.add(
          `query.${name}`,
          `unknown value ${unknown.map((u) => JSON.stringify(u)).join(', ')}; expected ${allowed.join(', ')}`,
        )
    }
    malformed.throwIfAny('unprocessable')
    return this.dataCenters
      .filter((d) => !regions || regions.includes(d.region))
      .filter((d) => !types || types.every((t) => d.networkVolumeTypes.includes(t as never)))
      .filter((d) => !compliance || compliance.every((c) => d.compliance.includes(c as never)))
      .filter((d) => q.globalNetwork === undefined || d.globalNetwork === q.globalNetwork)
      .map((d) => this.dataCenterView(d, include))
  }

  getDataCenter(id: string, includeParam?: string): DataCenter {
    const d = this.dcById.get(id)
    if (!d) throw notFound('data center', id)
    return this.dataCenterView(d, dcInclude(includeParam))
  }

  private gpuView(g: GpuTypeSpec, opts: GpuOptions | null): GpuType {
    const view: GpuType = {
      id: g.id,
      name: g.name ?? g.id,
      pool: g.pool,
      manufacturer: g.manufacturer,
      memory: g.memory,
      secure: true,
      community: false,
      price:
        g.price.serverless !== undefined && g.pool ? g.price : { secure: g.price.secure, community: g.price.community },
      maxCount: { secure: g.maxCount ?? 8, community: g.maxCount ?? 8 },
    }
    const stock = this.fleet.gpuStock(g.id)
    if (stock.total > 0 && this.fleet.hosts.some((h) => h.gpus.some((x) => x.typeId === g.id && x.virtual)))
      view.virtual = true
    if (!opts) return view
    const cuda = cudaFilter(opts.cudaVersions ?? [], opts.minCudaVersion ?? null)
    const eligible = opts.product !== 'SERVERLESS' || g.pool !== null
    const fits = (dataCenterIds?: string[]) => {
      if (!eligible || opts.cloud === 'COMMUNITY') return 0
      return this.fleet
        .gpuStock(g.id, { dataCenterIds, cuda })
        .perHostFree.reduce((n, f) => n + Math.floor(f / opts.count), 0)
    }
    view.availability = availabilityLevel(fits())
    view.dataCenters = this.dataCenters
      .filter((d) => !opts.countryCodes || (d.countryCode && opts.countryCodes.includes(d.countryCode)))
      .map((d) => ({ id: d.id, name: d.name, availability: availabilityLevel(fits([d.id])) }))
    const versions = this.fleet.cudaVersionsOf(g.id)
    if (versions.length) {
      view.cudaVersions = versions.map((version) => ({
        version,
        available:
          eligible &&
          opts.cloud !== 'COMMUNITY' &&
          this.fleet.gpuStock(g.id, { cuda: (v) => v === version }).perHostFree.some((f) => f >= opts.count),
      }))
    }
    view.stock = { total: stock.total, free: stock.free }
    return view
  }

  private cpuView(c: CpuFlavorSpec, opts: CpuOptions | null): CpuFlavor {
    const view: CpuFlavor = {
      id: c.id,
      name: c.name,
      group: c.group,
      vcpu: c.vcpu,
      ramGbPerVcpu: c.ramGbPerVcpu,
      price: c.price,
    }
    if (!opts) return view
    const vcpus = opts.vcpuCount ?? c.vcpu.min
    const valid = vcpus >= c.vcpu.min && vcpus <= c.vcpu.max
    const fits = (dcs?: string[]) => (valid ? this.fleet.cpuStock(vcpus, c.ramGbPerVcpu, dcs).fits : 0)
    view.availability = availabilityLevel(fits())
    view.dataCenters = this.dataCenters.map((d) => ({
      id: d.id,
      name: d.name,
      availability: availabilityLevel(fits([d.id])),
    }))
    const s = this.fleet.cpuStock(vcpus, c.ramGbPerVcpu)
    view.stock = { totalVcpu: s.totalVcpu, freeVcpu: s.freeVcpu }
    return view
  }

  private dataCenterView(d: DataCenterSpec, include: { gpu: boolean; cpu: boolean }): DataCenter {
    const view: DataCenter = {
      id: d.id,
      name: d.name,
      region: d.region,
      globalNetwork: d.globalNetwork,
      networkVolumeTypes: d.networkVolumeTypes,
      compliance: d.compliance,
    }
    if (include.gpu) {
      view.gpuAvailability = this.gpus
        .filter((g) => this.fleet.gpuStock(g.id, { dataCenterIds: [d.id] }).total > 0)
        .map((g) => ({
          id: g.id,
          name: g.name ?? g.id,
          availability: availabilityLevel(this.fleet.gpuStock(g.id, { dataCenterIds: [d.id] }).free),
        }))
    }
    if (include.cpu) {
      view.cpuAvailability = this.cpus.map((c) => ({
        id: c.id,
        name: c.name,
        availability: availabilityLevel(this.fleet.cpuStock(c.vcpu.min, c.ramGbPerVcpu, [d.id]).fits),
      }))
    }
    return view
  }
}

/** This machine as a fleet of one host, unless hosts are configured. */
export function localHosts(fleet: FleetConfig, machine: MachineInfo): Host[] {
  if (fleet.hosts) {
    return fleet.hosts.map((h) => ({
      id: h.id,
      dataCenterId: h.dataCenterId,
      vcpus: h.vcpus,
      memoryGb: h.memoryGb,
      gpus: h.gpus.map((g) => ({
        typeId: g.typeId,
        cudaVersion: g.cudaVersion,
        virtual: g.virtual,
        indices: g.indices ?? range(g.count),
      })),
    }))
  }
  const real = machine.gpus
  const gpus = real.length > 0 || !fleet.virtualGpus ? real : DEFAULT_VIRTUAL_GPUS
  let next = 0
  return [
    {
      id: 'local',
      dataCenterId: fleet.localDataCenterId,
      vcpus: Math.floor(machine.cores * fleet.cpuOversubscription),
      memoryGb: machine.memoryGb,
      // Virtual GPUs get distinct fake indices; real ones keep the indices nvidia-smi reported.
      gpus: gpus.map((g) => ({
        typeId: g.typeId,
        cudaVersion: g.cudaVersion,
        virtual: g.virtual,
        indices: g.indices ?? range(g.count).map(() => next++),
      })),
    },
  ]
}

interface GpuOptions {
  product: string
  count: number
  cloud: 'SECURE' | 'COMMUNITY'
  countryCodes?: string[]
  cudaVersions?: string[]
  minCudaVersion?: string
}
interface CpuOptions {
  product: string
  vcpuCount?: number
}

const GPU_PRODUCTS = ['POD', 'CLUSTER', 'SERVERLESS']
const CPU_PRODUCTS = ['POD', 'SERVERLESS']

/** Applies the catalog's parameter rules: 400 for combinations, 422 for malformed values. */
function gpuOptions(q: GpuQuery): GpuOptions | null {
  const bad = new Violations()
  const malformed = new Violations()
  const include = csv(q.include)
  if (include && (include.length !== 1 || include[0] !== 'AVAILABILITY'))
    malformed.add('include', `must be AVAILABILITY, got ${JSON.stringify(q.include)}`)
  if (q.product !== undefined && !csv(q.product)!.every((p) => GPU_PRODUCTS.includes(p)))
    malformed.add('product', `each value must be one of ${GPU_PRODUCTS.join(', ')}`)
  const countryCodes = csv(q.countryCodes)
  if (countryCodes?.some((c) => !/^[A-Z]{2}$/.test(c)))
    malformed.add('countryCodes', 'each value must be a two-letter upper-case country code')
  const cudaVersions = csv(q.cudaVersions)
  if (cudaVersions?.some((c) => !/^\d+\.\d+$/.test(c)))
    malformed.add('cudaVersions', 'each value must be <major>.<minor>')
  malformed.throwIfAny('unprocessable')
  if (include && q.product === undefined) bad.add('product', 'is required with include')
  if (!include) {
    for (const k of ['product', 'count', 'cloud', 'countryCodes', 'cudaVersions', 'minCudaVersion'] as const) {
      if (q[k] !== undefined) bad.add(k, 'is only valid with include=AVAILABILITY')
    }
  }
  if (cudaVersions && q.minCudaVersion !== undefined) bad.add('cudaVersions', 'cannot be combined with minCudaVersion')
  bad.throwIfAny('bad_request')
  if (!include) return null
  return {
    product: q.product!,
    count: q.count ?? 1,
    cloud: q.cloud ?? 'SECURE',
    countryCodes,
    cudaVersions,
    minCudaVersion: q.minCudaVersion,
  }
}

function cpuOptions(q: CpuQuery): CpuOptions | null {
  const include = csv(q.include)
  const malformed = new Violations()
  if (include && (include.length !== 1 || include[0] !== 'AVAILABILITY'))
    malformed.add('include', `must be AVAILABILITY, got ${JSON.stringify(q.include)}`)
  if (q.product !== undefined && !csv(q.product)!.every((p) => CPU_PRODUCTS.includes(p)))
    malformed.add('product', `each value must be one of ${CPU_PRODUCTS.join(', ')}`)
  if (q.vcpuCount !== undefined && (q.vcpuCount & (q.vcpuCount - 1)) !== 0)
    malformed.add('vcpuCount', `must be a power of two, got ${q.vcpuCount}`)
  malformed.throwIfAny('unprocessable')
  const bad = new Violations()
  if (include && q.product === undefined) bad.add('product', 'is required with include')
  if (!include)
    for (const k of ['product', 'vcpuCount'] as const)
      if (q[k] !== undefined) bad.add(k, 'is only valid with include=AVAILABILITY')
  bad.throwIfAny('bad_request')
  return include ? { product: q.product!, vcpuCount: q.vcpuCount } : null
}

function dcInclude(param?: string): { gpu: boolean; cpu: boolean } {
  const include = csv(param) ?? []
  const unknown = include.filter((i) => i !== 'GPU_AVAILABILITY' && i !== 'CPU_AVAILABILITY')
  if (unknown.length)
    throw new DomainError(
      'unprocessable',
      `include: unknown value ${unknown.map((u) => JSON.stringify(u)).join(', ')}; expected GPU_AVAILABILITY, CPU_AVAILABILITY`,
      [`include: must be GPU_AVAILABILITY or CPU_AVAILABILITY`],
    )
  return { gpu: include.includes('GPU_AVAILABILITY'), cpu: include.includes('CPU_AVAILABILITY') }
}

function csv(v: string | undefined): string[] | undefined {
  return v === undefined
    ? undefined
    : v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
}

function merge<T extends { id: string }>(base: readonly T[], extra: readonly T[]): T[] {
  const byId = new Map(base.map((x) => [x.id, x]))
  for (const x of extra) byId.set(x.id, x)
  return [...byId.values()]
}

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i)
}
