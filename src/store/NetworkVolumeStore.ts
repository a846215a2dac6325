import type { NetworkVolume } from '../contract/networkVolume.js'
import type { Owned, OwnedCollection } from './OwnedCollection.js'

/** A network volume as stored: the response shape plus its owner. */
export type NetworkVolumeRecord = NetworkVolume & Owned

/** Network volumes (their files live on the data center's storage, not here). */
export type NetworkVolumeStore = OwnedCollection<NetworkVolumeRecord>
