import type { Pod, PodRuntime, SshEndpoint } from '../../contract/pod.js'
import { holdsCapacity, podActions, type PodRecord } from './pod.js'

/** Prices the cost rule reads (USD/hour), from the catalog. */
export interface PodPrices {
  /** Per GPU of the type, for the pod's cloud. */
  gpu?: number
  /** Per vCPU of the flavor. */
  perVcpu?: number
}

/** Live facts of a RUNNING pod, read from the runtime when answering. */
export interface PodLive {
  /** Percent of one CPU (200 = two busy). */
  cpuPercent: number
  memoryBytes: number
  gpuPercent?: number
}

/** Internal DNS suffix of global networking addresses. */
export const INTERNAL_DNS_SUFFIX = 'hangar.internal'

/**
 * USD/hour while the pod holds capacity (every status but EXITED and TERMINATED): GPU price x count, or the
 * flavor's price per vCPU x vCPUs. Disk is not priced by the catalog, so it adds nothing.
 */
export function podCost(pod: Pick<PodRecord, 'status' | 'gpu' | 'cpu'>, prices: PodPrices): number {
  if (!holdsCapacity(pod.status)) return 0
  const usd = pod.gpu ? (prices.gpu ?? 0) * pod.gpu.count : pod.cpu ? (prices.perVcpu ?? 0) * pod.cpu.vcpuCount : 0
  return Math.round(usd * 10_000) / 10_000
}

/**
 * The response shape (api-facts §2.3): every key present; `gpu`/`cpu` by kind; `cluster` only for members;
 * `template` always null; `runtime` only while RUNNING. `ssh.proxy` is always null: Hangar has no SSH
 * proxy, so SSH is `direct` to the host port mapped to 22/tcp.
 */
export function toPod(
  pod: PodRecord,
  o: { prices: PodPrices; now: number; live: PodLive | null; hostMemoryBytes: number },
): Pod {
  const view: Pod = {
    id: pod.id,
    name: pod.name,
    status: pod.status,
    actions: podActions(pod.status, pod.locked),
    cloud: pod.cloud,
    image: pod.image,
    args: pod.args,
    cmd: [...pod.cmd],
    entrypoint: [...pod.entrypoint],
    disk: pod.disk,
    env: { ...pod.env },
    ports: [...pod.ports],
    registry: pod.registry,
    mounts: structuredClone(pod.mounts),
    dataCenterId: pod.placement?.dataCenterId ?? null,
    cudaVersion: pod.placement?.cudaVersion ?? null,
    ssh: { proxy: null, direct: pod.status === 'RUNNING' ? directSsh(pod) : null },
    template: null,
    cost: podCost(pod, o.prices),
    locked: pod.locked,
    globalNetworking: pod.globalNetworking
      ? {
          enabled: true,
          ...(pod.status === 'RUNNING' && pod.portMappings[0] ? { ip: pod.portMappings[0].ip } : {}),
          internalDns: `${pod.id}.${INTERNAL_DNS_SUFFIX}`,
        }
      : { enabled: false },
    runtime: pod.status === 'RUNNING' ? runtimeOf(pod, o) : null,
    createdAt: pod.createdAt,
    startedAt: pod.startedAt,
  }
  if (pod.gpu) view.gpu = { id: pod.gpu.id, count: pod.gpu.count }
  if (pod.cpu) view.cpu = { ...pod.cpu }
  if (pod.cluster) view.cluster = { ...pod.cluster }
  return view
}

function directSsh(pod: PodRecord): SshEndpoint | null {
  if (!pod.ports.includes('22/tcp')) return null
  const m = pod.portMappings.find((p) => p.privatePort === 22 && p.protocol === 'tcp')
  if (!m) return null
  return { host: m.ip, port: m.publicPort, username: 'root', command: `ssh root@${m.ip} -p ${m.publicPort}` }
}

function runtimeOf(pod: PodRecord, o: { now: number; live: PodLive | null; hostMemoryBytes: number }): PodRuntime {
  const started = pod.startedAt ? Date.parse(pod.startedAt) : o.now
  const vcpus = pod.cpu?.vcpuCount ?? 0
  const memoryBytes = pod.cpu ? pod.cpu.memory * 1024 ** 3 : o.hostMemoryBytes
  const pct = (v: number) => Math.max(0, Math.min(100, Math.round(v)))
  return {
    uptime: Math.max(0, Math.floor((o.now - started) / 1000)),
    // Utilisation of simulated GPUs would be made up; real ones report what the runtime measured.
    gpus:
      pod.gpu && !pod.placement?.virtual
        ? Array.from({ length: pod.gpu.count }, () => ({ util: pct(o.live?.gpuPercent ?? 0), memoryUtil: 0 }))
        : [],
    cpu: { util: pct(o.live ? o.live.cpuPercent / Math.max(1, vcpus) : 0) },
    memory: { util: pct(o.live && memoryBytes > 0 ? (o.live.memoryBytes / memoryBytes) * 100 : 0) },
    ports: pod.ports.map((p) => {
      const [port, type] = p.split('/')
      const m = pod.portMappings.find((x) => x.privatePort === Number(port) && x.protocol === type)
      return { private: Number(port), public: m?.publicPort ?? null, type: type as 'http' | 'tcp', ip: m?.ip ?? null }
    }),
  }
}
