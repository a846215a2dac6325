import type { ClusterType } from '../contract/cluster.js'
import type { Owned, OwnedCollection } from './OwnedCollection.js'

/** A cluster as stored; its members are pods (PodStore) whose `cluster.id` is this id. */
export interface ClusterRecord extends Owned {
  name: string
  type: ClusterType
  compute: { gpuTypeId: string; gpuCountPerPod: number; podCount: number }
  dataCenterId: string
  /** The members' private network block, e.g. `127.80.17.0/24` on the process runtime. */
  cidr: string
  /** Where the primary (rank 0) listens for the others (PRIMARY_PORT / MASTER_PORT). */
  primaryPort: number
}

/** Instant clusters. */
export type ClusterStore = OwnedCollection<ClusterRecord>
