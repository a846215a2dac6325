import type {
  ListedWorkload,
  RuntimeDriver,
  RuntimeRef,
  StartHooks,
  Workload,
  WorkloadSpec,
  WorkloadStats,
} from './RuntimeDriver.js'
import { Slots } from './Slots.js'

/**
 * The fleet's runtimes behind one RuntimeDriver: each host's own (its container engine), the local one for
 * hosts without. Refs name their host (`<runtime>:<host>:...`), so every call goes where its workload is.
 */
export class HostRuntimes implements RuntimeDriver {
  readonly name: string
  /** Starts running at once on each host, and on each driver (a cluster's API server serves all its hosts). */
  private readonly hostSlots = new Map<string, Slots>()
  private readonly driverSlots = new Map<RuntimeDriver, Slots>()

  constructor(
    private readonly local: RuntimeDriver,
    private readonly byHost: ReadonlyMap<string, RuntimeDriver>,
    private readonly limits: StartLimits = DEFAULT_START_LIMITS,
  ) {
    this.name =
      byHost.size === 0 ? local.name : [...new Set([local.name, ...[...byHost.values()].map((d) => d.name)])].join('+')
  }

  /** The runtime name (`process`, `docker`) of a host. */
  runtimeOf(hostId: string): string {
    return this.of(hostId).name
  }

  /** Hosts with a runtime of their own (an engine that can stop answering). */
  engineHosts(): string[] {
    return [...this.byHost.keys()]
  }

  /**
   * Starts run side by side (the autoscaler does not wait for them), bounded per host and per driver so an
   * engine or a cluster's API server is not flooded by a burst from zero; a start waits for a slot first.
   */
  async start(spec: WorkloadSpec, hooks?: StartHooks): Promise<Workload> {
    const driver = this.of(spec.hostId)
    const host = slotsOf(this.hostSlots, spec.hostId, driver.hostStartLimit ?? this.limits.perHost)
    const all = slotsOf(this.driverSlots, driver, this.limits.perDriver)
    const releaseHost = await host.acquire(hooks?.signal)
    let releaseAll: (() => void) | undefined
    try {
      releaseAll = await all.acquire(hooks?.signal)
      return await driver.start(spec, hooks)
    } finally {
      releaseAll?.()
      releaseHost()
    }
  }

  /**
   * A workload of the runtime its host runs now. One its host ran under another runtime (processes before an
   * engine was configured, or the reverse) is not adopted: it is stopped and started again where it now belongs.
   */
  async adopt(ref: RuntimeRef): Promise<Workload | null> {
    if (this.switched(ref)) return null
    return this.byRef(ref).adopt(ref)
  }

  stats(ref: RuntimeRef): Promise<WorkloadStats | null> {
    return this.byRef(ref).stats(ref)
  }

  /** Goes to the runtime that made `ref`, even when its host now runs another one (so nothing is left running). */
  remove(ref: RuntimeRef): Promise<void> {
    return this.byRef(ref).remove(ref)
  }

  /**
   * Why `ref` cannot be adopted when that is because its host switched runtime (`a process, and host local now
   * runs containers (docker)`); null otherwise.
   */
  switched(ref: RuntimeRef): string | null {
    const made = runtimeOfRef(ref)
    const host = hostOf(ref)
    const now = this.runtimeOf(host)
    if (made === now) return null
    const what = made === 'process' ? 'a local process' : `a ${made} container`
    return `it ran as ${what}, and host ${host} now runs ${now === 'process' ? 'local processes' : `containers (${now})`}`
  }

  removePersistent(hostId: string, name: string): Promise<void> {
    return this.of(hostId).removePersistent(hostId, name)
  }

  /** Every runtime's workloads; a runtime that does not answer is left out (its host is down). */
  async list(labels: Record<string, string>): Promise<ListedWorkload[]> {
    // One driver may serve several hosts (a Kubernetes cluster): each is asked once.
    const drivers = [...new Set([this.local, ...this.byHost.values()])]
    // One engine that does not answer must not hide the others' workloads; HostMonitor's pings report that host
    // as down (logged there, once), so this list does not log it again.
    const lists = await Promise.all(drivers.map((d) => d.list(labels).catch(() => [])))
    return lists.flat()
  }

  ping(hostId: string): Promise<void> {
    return this.of(hostId).ping(hostId)
  }

  /** Every runtime writes its logs to the control plane's data dir, where the local one says. */
  logPath(kind: WorkloadSpec['kind'], id: string): string {
    return this.local.logPath(kind, id)
  }

  private of(hostId: string): RuntimeDriver {
    return this.byHost.get(hostId) ?? this.local
  }

  /** The driver that made `ref`: local processes, or its host's engine. */
  private byRef(ref: RuntimeRef): RuntimeDriver {
    return runtimeOfRef(ref) === this.local.name ? this.local : this.of(hostOf(ref))
  }
}

/** How many starts run at once: on one host, and through one driver (one engine, one cluster's API server). */
export interface StartLimits {
  perHost: number
  perDriver: number
}

/**
 * A host's engine pulls and creates a few containers at a time well; a cluster's API server takes a burst of
 * Pod creations, but a stuck start (a Pod its node never runs) holds its slot until it is called off, so the
 * cluster's bound leaves room for many of those.
 */
export const DEFAULT_START_LIMITS: StartLimits = { perHost: 8, perDriver: 64 }

function slotsOf<K>(map: Map<K, Slots>, key: K, limit: number): Slots {
  let s = map.get(key)
  if (!s) map.set(key, (s = new Slots(limit)))
  return s
}

/** The runtime segment of a ref (`process`, `docker`). */
export function runtimeOfRef(ref: RuntimeRef): string {
  return ref.split(':')[0] ?? ''
}

/** The host segment of a ref (`<runtime>:<host>:...`). */
export function hostOf(ref: RuntimeRef): string {
  return decodeURIComponent(ref.split(':')[1] ?? '')
}
