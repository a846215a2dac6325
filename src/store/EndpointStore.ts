import type { EndpointRecord, ReleaseRecord } from '../domain/endpoints/endpoint.js'
import type { OwnedCollection } from './OwnedCollection.js'

export type { EndpointRecord, ReleaseRecord } from '../domain/endpoints/endpoint.js'

/** Another resource an endpoint may hold, for the "in use, refuse delete" checks (src/services/inUse.ts). */
export type EndpointReference = { templateId: string } | { registryId: string } | { networkVolumeId: string }

/** Serverless endpoints. */
export interface EndpointStore extends OwnedCollection<EndpointRecord> {
  /** Every endpoint of every account, oldest first (the autoscaler's view). */
  listAll(): Promise<EndpointRecord[]>
  /** Ids of the account's endpoints holding `ref`, oldest first. */
  referencing(accountId: string, ref: EndpointReference): Promise<string[]>
}

/** The releases of endpoints: one per change to what their workers run. */
export interface ReleaseStore {
  insert(release: ReleaseRecord): Promise<void>
  /** The endpoint's releases, oldest first. */
  listByEndpoint(endpointId: string): Promise<ReleaseRecord[]>
  /** Deletes the endpoint's releases; returns how many. */
  deleteByEndpoint(endpointId: string): Promise<number>
}
