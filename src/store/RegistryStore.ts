import type { Delegation, Registry } from '../contract/registry.js'
import type { Owned, OwnedCollection } from './OwnedCollection.js'

/** A registry credential as stored: username and password sealed by the SecretBox, never in clear. */
export type RegistryRecord = Registry & Owned & { username: string; password: string }

/** An ECR pull delegation as stored. */
export type DelegationRecord = Delegation & Owned

/** Container registry credentials. */
export type RegistryStore = OwnedCollection<RegistryRecord>

/** ECR pull delegations. */
export type DelegationStore = OwnedCollection<DelegationRecord>
