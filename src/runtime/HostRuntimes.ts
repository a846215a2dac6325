import type { ListedWorkload, RuntimeDriver, RuntimeRef, StartHooks, Workload, WorkloadSpec, WorkloadStats } from './RuntimeDriver.js'

/**
 * The fleet's runtimes behind one RuntimeDriver: each host's own (its container engine), the local one for
 * hosts without. Refs name their host (`<runtime>:<host>:...`), so every call goes where its workload is.
 */
export class HostRuntimes implements RuntimeDriver {
  readonly name: string

  constructor(
    private readonly local: RuntimeDriver,
    private readonly byHost: ReadonlyMap<string, RuntimeDriver>,
  ) {
    this.name = byHost.size === 0 ? local.name : [...new Set([local.name, ...[...byHost.values()].map((d) => d.name)])].join('+')
  }

  /** The runtime name (`process`, `docker`) of a host. */
  runtimeOf(hostId: string): string {
    return this.of(hostId).name
  }

  /** Hosts with a runtime of their own (an engine that can stop answering). */
  engineHosts(): string[] {
    return [...this.byHost.keys()]
  }

  start(spec: WorkloadSpec, hooks?: StartHooks): Promise<Workload> {
    return this.of(spec.hostId).start(spec, hooks)
  }

  adopt(ref: RuntimeRef): Promise<Workload | null> {
    return this.of(hostOf(ref)).adopt(ref)
  }

  stats(ref: RuntimeRef): Promise<WorkloadStats | null> {
    return this.of(hostOf(ref)).stats(ref)
  }

  remove(ref: RuntimeRef): Promise<void> {
    return this.of(hostOf(ref)).remove(ref)
  }

  removePersistent(hostId: string, name: string): Promise<void> {
    return this.of(hostId).removePersistent(hostId, name)
  }

  /** Every runtime's workloads; a runtime that does not answer is left out (its host is down). */
  async list(labels: Record<string, string>): Promise<ListedWorkload[]> {
    // One driver may serve several hosts (a Kubernetes cluster): each is asked once.
    const drivers = [...new Set([this.local, ...this.byHost.values()])]
    const lists = await Promise.all(drivers.map((d) => d.list(labels).catch(() => [])))
    return lists.flat()
  }

  ping(hostId: string): Promise<void> {
    return this.of(hostId).ping(hostId)
  }

  private of(hostId: string): RuntimeDriver {
    return this.byHost.get(hostId) ?? this.local
  }
}

/** The host segment of a ref (`<runtime>:<host>:...`). */
export function hostOf(ref: RuntimeRef): string {
  return decodeURIComponent(ref.split(':')[1] ?? '')
}
