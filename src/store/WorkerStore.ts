/** Lifecycle of a worker as stored; live detail (idle or running) is kept in memory by the service. */
import type { StoredWorkerState } from '../domain/workers/workerState.js'

/** Derived from the worker's phase by `storedStateOf` (domain/workers/workerState.ts). */
export type WorkerState = StoredWorkerState

/** A serverless worker: one process (or container) serving one endpoint. */
export interface WorkerRecord {
  id: string
  endpointId: string
  accountId: string
  state: WorkerState
  /** sha256 (hex) of the worker's own protocol key; the key itself is never stored. */
  tokenHash: string
  /** Release version of the endpoint it runs. */
  version: number
  image: string
  gpuTypeId: string | null
  gpuCount: number
  dataCenterId: string | null
  /** Fleet host it was placed on. */
  hostId: string | null
  /** What the runtime calls it (opaque, see RuntimeDriver), to re-adopt or remove it after a control-plane restart. */
  runtimeRef: string | null
  createdAt: number
  startedAt: number | null
  stoppedAt: number | null
  /** Why it stopped or failed, for users. */
  lastError: string | null
}

/** Storage of workers, kept so a restarted control plane can stop the workers of its previous run. */
export interface WorkerStore {
  insert(worker: WorkerRecord): Promise<void>
  get(id: string): Promise<WorkerRecord | undefined>
  update(id: string, patch: Partial<Omit<WorkerRecord, 'id' | 'endpointId' | 'accountId'>>): Promise<void>
  /** Workers not EXITED or FAILED, of one endpoint or of all. */
  listActive(endpointId?: string): Promise<WorkerRecord[]>
  /** Most recent workers of an endpoint (any state), newest first. */
  listRecent(endpointId: string, limit: number): Promise<WorkerRecord[]>
}
