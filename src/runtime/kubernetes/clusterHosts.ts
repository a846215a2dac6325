import type { CoreV1Api, V1Node, V1Pod } from '@kubernetes/client-node'
import type { Host } from '../../catalog/Fleet.js'
import type { KubernetesConfig } from './KubernetesConfig.js'
import { dnsName } from './podManifest.js'
import { MANAGED_BY } from './PodWatch.js'

/** The fleet hosts a cluster stands for, and the node selector of each. */
export interface ClusterHosts {
  hosts: Host[]
  selectors: Map<string, Record<string, string>>
}

/** Fleet host id of the Nodes with GPU label `value` (`k8s` for Nodes without one). */
export function clusterHostId(value: string | null): string {
  return value === null ? 'k8s' : `k8s-${dnsName(value, 50)}`
}

/**
 * The cluster as fleet hosts: its Ready, schedulable Nodes grouped by the GPU label (one host per GPU model,
 * one `k8s` host for Nodes without the label), each with what the Nodes can allocate (CPU, memory, GPUs)
 * minus what Pods not made by Hangar request (Hangar's own Pods are in the fleet's ledger already). vCPUs and
 * memory are multiplied by `oversubscription`. Kubernetes still places each Pod: a host is a node selector.
 */
export async function clusterHosts(api: CoreV1Api, c: KubernetesConfig, dataCenterId: string): Promise<ClusterHosts> {
  const [nodes, pods] = await Promise.all([api.listNode({}), api.listPodForAllNamespaces({})])
  const requested = new Map<string, { cpu: number; memory: number; gpus: number }>()
  for (const pod of pods.items) {
    if (isHangars(pod) || !pod.spec?.nodeName || pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed')
      continue
    const r = requested.get(pod.spec.nodeName) ?? { cpu: 0, memory: 0, gpus: 0 }
    for (const container of pod.spec.containers) {
      const req = { ...(container.resources?.limits ?? {}), ...(container.resources?.requests ?? {}) }
      r.cpu += cpu(req.cpu)
      r.memory += bytes(req.memory)
      r.gpus += Number(req[c.gpuResource] ?? 0)
    }
    requested.set(pod.spec.nodeName, r)
  }
  const groups = new Map<
    string,
    { value: string | null; cpu: number; memory: number; gpus: number; cuda: string | null }
  >()
  for (const node of nodes.items) {
    if (!isReady(node)) continue
    const value = node.metadata?.labels?.[c.gpuLabel] ?? null
    const id = clusterHostId(value)
    const g = groups.get(id) ?? { value, cpu: 0, memory: 0, gpus: 0, cuda: null }
    const a = node.status?.allocatable ?? {}
    const r = requested.get(node.metadata?.name ?? '') ?? { cpu: 0, memory: 0, gpus: 0 }
    g.cpu += Math.max(0, cpu(a.cpu) - r.cpu)
    g.memory += Math.max(0, bytes(a.memory) - r.memory)
    g.gpus += Math.max(0, Number(a[c.gpuResource] ?? 0) - r.gpus)
    // GPU feature discovery's labels of the CUDA version the driver supports.
    const l = node.metadata?.labels ?? {}
    const major = l['nvidia.com/cuda.driver.major'] ?? l['nvidia.com/cuda.runtime.major']
    const minor = l['nvidia.com/cuda.driver.minor'] ?? l['nvidia.com/cuda.runtime.minor']
    if (major && minor) g.cuda = `${major}.${minor}`
    groups.set(id, g)
  }
  const hosts: Host[] = []
  const selectors = new Map<string, Record<string, string>>()
  for (const [id, g] of groups) {
    hosts.push({
      id,
      dataCenterId: c.dataCenterId ?? dataCenterId,
      vcpus: Math.floor(g.cpu * c.oversubscription),
      memoryGb: Math.floor((g.memory / 1024 ** 3) * c.oversubscription),
      gpus:
        g.value === null
          ? []
          : [
              {
                typeId: c.gpuTypes[g.value] ?? g.value,
                cudaVersion: g.cuda,
                virtual: false,
                indices: Array.from({ length: g.gpus }, (_, i) => i),
              },
            ],
    })
    if (g.value !== null) selectors.set(id, { [c.gpuLabel]: g.value })
  }
  return { hosts, selectors }
}

/**
 * Brings `hosts` (as made by clusterHosts, held by the fleet) in step with the cluster now: capacity that
 * Nodes or other Pods took or gave back. Groups that appeared since are not added (a restart adds them).
 */
export async function refreshClusterHosts(
  api: CoreV1Api,
  c: KubernetesConfig,
  dataCenterId: string,
  hosts: Host[],
): Promise<void> {
  const now = await clusterHosts(api, c, dataCenterId)
  for (const h of hosts) {
    const fresh = now.hosts.find((x) => x.id === h.id)
    h.vcpus = fresh?.vcpus ?? 0
    h.memoryGb = fresh?.memoryGb ?? 0
    for (const g of h.gpus)
      g.indices = Array.from(
        { length: fresh?.gpus.find((x) => x.typeId === g.typeId)?.indices.length ?? 0 },
        (_, i) => i,
      )
  }
}

function isHangars(pod: V1Pod): boolean {
  return Object.entries(MANAGED_BY).every(([k, v]) => pod.metadata?.labels?.[k] === v)
}

function isReady(node: V1Node): boolean {
  return (
    !node.spec?.unschedulable && (node.status?.conditions ?? []).some((x) => x.type === 'Ready' && x.status === 'True')
  )
}

/** CPUs of a quantity (`2`, `500m`). */
export function cpu(q: string | undefined): number {
  if (!q) return 0
  return q.endsWith('m') ? Number(q.slice(0, -1)) / 1000 : Number(q)
}

const UNITS: Record<string, number> = {
  Ki: 1024,
  Mi: 1024 ** 2,
  Gi: 1024 ** 3,
  Ti: 1024 ** 4,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
}

/** Bytes of a quantity (`24581684Ki`, `4Gi`, `1e9`). */
export function bytes(q: string | undefined): number {
  if (!q) return 0
  const m = /^([0-9.e+]+)([KMGT]i?|k)?$/.exec(q)
  if (!m) return 0
  return Number(m[1]) * (m[2] ? (UNITS[m[2]] ?? 1) : 1)
}
