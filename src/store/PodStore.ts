import type { PodRecord } from '../domain/pods/pod.js'

export type { PodRecord } from '../domain/pods/pod.js'

/** Which pods a list returns; filters AND together. */
export interface PodFilter {
  accountId?: string
  /** Only the members of this cluster. */
  clusterId?: string
  /** Without a `clusterId`: also pods that belong to a cluster (default false, as GET /v2/pods). */
  includeClusterPods?: boolean
}

/**
 * Storage of pods. Plain records, no driver types; reads never filter by account on their own (services
 * answer foreign and missing pods alike).
 */
export interface PodStore {
  insert(pod: PodRecord): Promise<void>
  get(id: string): Promise<PodRecord | undefined>
  /** Oldest first. */
  list(filter: PodFilter): Promise<PodRecord[]>
  /** Every pod whose status is not EXITED or TERMINATED (they hold capacity or run), oldest first. */
  listHoldingCapacity(): Promise<PodRecord[]>
  /** Replaces the stored pod; false when it does not exist. */
  update(pod: PodRecord): Promise<boolean>
  delete(id: string): Promise<boolean>
}
