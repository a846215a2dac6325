import type { Cloud, PodAction, PodCluster, PodMounts, PodStatus } from '../../contract/pod.js'
import type { ContainerFields } from '../endpoints/endpointRulesContainer.js'
import { INITIAL_POD_STATUS } from './podState.js'

/** GPU of a pod as stored: the type, how many, and the CUDA constraint used at each placement. */
export interface PodGpu {
  id: string
  count: number
  /** [] = any. */
  allowedCudaVersions: string[]
  /** null = no floor. */
  minCudaVersion: string | null
}

/** Where a pod was last placed; kept while EXITED so `start` prefers the same host. */
export interface PodPlacement {
  hostId: string
  dataCenterId: string
  gpuIndices: number[]
  /** Host CUDA version of its GPUs (null for CPU pods or hosts that report none). */
  cudaVersion: string | null
  /** Simulated GPUs (no real device behind them). */
  virtual: boolean
}

/** A host port a pod's private port is reachable on, as the runtime reported it. */
export interface PodPortMapping {
  privatePort: number
  publicPort: number
  protocol: 'http' | 'tcp'
  ip: string
}

/** What the rules decide about a pod: its settings, independent of where and whether it runs. */
export interface PodSpec extends ContainerFields {
  name: string
  cloud: Cloud
  dataCenterIds: string[]
  globalNetworking: boolean
  gpu: PodGpu | null
  cpu: { id: string; vcpuCount: number; memory: number } | null
  mounts: PodMounts
  locked: boolean
}

/** A pod as stored: its spec plus identity, status, placement and what the runtime told us. */
export interface PodRecord extends PodSpec {
  id: string
  accountId: string
  createdAt: string
  status: PodStatus
  /** The last placement (held while the status is not EXITED/TERMINATED), null before the first. */
  placement: PodPlacement | null
  /** The runtime's id of the running program (RuntimeRef), null when none runs. */
  runtimeRef: string | null
  /** Host ports of the running program, as the runtime mapped them; [] when none runs. */
  portMappings: PodPortMapping[]
  /** Latest start (RFC 3339), null before the first. */
  startedAt: string | null
  /** Why the pod is in ERROR (or why it last stopped), for users. */
  lastError: string | null
  /** Membership when the pod belongs to a cluster. */
  cluster: PodCluster | null
}

/** Who a new pod is and where it was placed; the rest of a new record is the same for every pod. */
export interface NewPod {
  id: string
  accountId: string
  createdAt: string
  placement?: PodPlacement | null
  cluster?: PodCluster | null
}

/** A pod as first stored (by a create, or as a member of a cluster's create): placed, nothing running yet. */
export function newPodRecord(spec: PodSpec, who: NewPod): PodRecord {
  return {
    ...spec,
    id: who.id,
    accountId: who.accountId,
    createdAt: who.createdAt,
    status: INITIAL_POD_STATUS,
    placement: who.placement ?? null,
    runtimeRef: null,
    portMappings: [],
    startedAt: null,
    lastError: null,
    cluster: who.cluster ?? null,
  }
}

/** Statuses in which a pod holds capacity (GPUs, vCPUs, memory) on its host. */
export function holdsCapacity(status: PodStatus): boolean {
  return status !== 'EXITED' && status !== 'TERMINATED'
}

/**
 * The actions valid in a status (api-facts §2.4). A locked pod cannot be stopped, and cannot be restarted
 * either: a restart wipes the container disk, which is what the lock protects against (v1's "reset").
 */
export function podActions(status: PodStatus, locked: boolean): PodAction[] {
  const all: Record<PodStatus, PodAction[]> = {
    RUNNING: ['stop', 'restart', 'terminate'],
    EXITED: ['start', 'terminate'],
    ERROR: ['start', 'terminate'],
    PROVISIONING: ['stop', 'terminate'],
    STARTING: ['stop', 'terminate'],
    TERMINATED: [],
  }
  return all[status].filter((a) => !(locked && (a === 'stop' || a === 'restart')))
}

/** Why `action` is not valid now (the 409 detail), or null when it is. */
export function actionRefusal(pod: Pick<PodRecord, 'id' | 'status' | 'locked'>, action: PodAction): string | null {
  if (podActions(pod.status, pod.locked).includes(action)) return null
  if (pod.locked && (action === 'stop' || action === 'restart') && podActions(pod.status, false).includes(action)) {
    return `pod ${pod.id} is locked: it cannot be ${action === 'stop' ? 'stopped' : 'restarted'}; PATCH {"locked": false} first`
  }
  const valid = podActions(pod.status, pod.locked)
  return `action ${JSON.stringify(action)} is not valid for pod ${pod.id} while it is ${pod.status}; valid now: ${valid.length ? valid.join(', ') : 'none'}`
}
