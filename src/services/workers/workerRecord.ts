import { createHash } from 'node:crypto'
import type { Allocation } from '../../catalog/Fleet.js'
import type { EndpointRecord } from '../../domain/endpoints/endpoint.js'
import { storedStateOf } from '../../domain/workers/workerState.js'
import type { WorkerRecord } from '../../store/WorkerStore.js'

/** The stored record of a worker about to start on `allocation`; only the hash of its protocol key is kept. */
export function newWorkerRecord(
  id: string,
  ep: EndpointRecord,
  allocation: Allocation,
  tokenHash: string,
  now: number,
): WorkerRecord {
  return {
    id,
    endpointId: ep.id,
    accountId: ep.accountId,
    // Recorded when it is launched (phase `starting`).
    state: storedStateOf('starting'),
    tokenHash,
    version: ep.version,
    image: ep.image,
    gpuTypeId: allocation.gpuTypeId,
    gpuCount: allocation.gpuIndices.length,
    dataCenterId: allocation.dataCenterId,
    hostId: allocation.hostId,
    runtimeRef: null,
    createdAt: now,
    startedAt: null,
    stoppedAt: null,
    lastError: null,
  }
}

/** How a worker's protocol key is stored (and compared): its SHA-256, in hex. */
export function tokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex')
}
