import type { Allocation } from '../../catalog/Fleet.js'
import type { PodRecord } from '../../domain/pods/pod.js'
import { LABELS } from '../../runtime/labels.js'
import type { WorkloadMount, WorkloadSpec } from '../../runtime/RuntimeDriver.js'

/**
 * Where a pod's container disk appears in a container (a process is told the host path by env). Not
 * `/workspace`: that is where templates put the persistent mount.
 */
export const POD_DISK_TARGET = '/scratch'

/** The name of a pod's persistent mount on its host (one per pod). */
export function persistentName(podId: string): string {
  return `pod-${podId}`
}

/**
 * Labels every pod workload carries, so a restarted control plane finds its own installation's pods (and
 * their orphans) and never another installation's on a shared engine.
 */
export function podLabels(
  pod: Pick<PodRecord, 'id' | 'accountId'> & Partial<Pick<PodRecord, 'cluster'>>,
  installationId: string,
): Record<string, string> {
  const labels: Record<string, string> = {
    [LABELS.installation]: installationId,
    [LABELS.kind]: 'pod',
    [LABELS.id]: pod.id,
    [LABELS.pod]: pod.id,
    [LABELS.account]: pod.accountId,
  }
  if (pod.cluster)
    Object.assign(labels, { [LABELS.cluster]: pod.cluster.id, [LABELS.clusterRank]: String(pod.cluster.rank) })
  return labels
}

/**
 * What the runtime runs for a pod: its image and command, its env plus the reference platform's pod
 * variables (which the pod cannot override), its GPUs, resources, mounts and ports. Host basics (PATH)
 * are the driver's business.
 */
export function podWorkload(
  pod: PodRecord,
  a: Allocation,
  volumePath: string | null,
  installationId: string,
): WorkloadSpec {
  const mounts: WorkloadMount[] = [{ kind: 'disk', target: POD_DISK_TARGET, sizeGb: pod.disk }]
  if (pod.mounts.persistent)
    mounts.push({
      kind: 'persistent',
      name: persistentName(pod.id),
      target: pod.mounts.persistent.path,
      sizeGb: pod.mounts.persistent.size,
    })
  const network = pod.mounts.network?.[0]
  if (network && volumePath) mounts.push({ kind: 'volume', source: volumePath, target: network.path })
  const platform: Record<string, string> = {
    RUNPOD_POD_ID: pod.id,
    RUNPOD_POD_HOSTNAME: pod.id,
    RUNPOD_DC_ID: a.dataCenterId,
    RUNPOD_GPU_COUNT: String(a.gpuIndices.length),
    RUNPOD_CPU_COUNT: String(pod.cpu?.vcpuCount ?? 0),
  }
  // A CPU pod sees no GPU even on a GPU host; simulated GPUs have no device to name.
  if (!a.gpuTypeId) platform.CUDA_VISIBLE_DEVICES = ''
  return {
    id: pod.id,
    kind: 'pod',
    hostId: a.hostId,
    labels: podLabels(pod, installationId),
    image: pod.image,
    entrypoint: [...pod.entrypoint],
    cmd: [...pod.cmd],
    env: { ...pod.env, ...platform },
    gpus: { ids: a.gpuIndices.map(String), virtual: a.virtual },
    resources: { vcpus: a.vcpus, memoryGb: a.memoryGb },
    mounts,
    ports: pod.ports.map((p) => {
      const [port, protocol] = p.split('/')
      return { port: Number(port), protocol: protocol as 'http' | 'tcp' }
    }),
    pullAuth: null,
  }
}
