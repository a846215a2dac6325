import type { Owned, OwnedCollection } from './OwnedCollection.js'

/** An account's secret as stored: its value sealed by the SecretBox (context `secret:<id>`), never in clear. */
export interface SecretRecord extends Owned {
  /** Unique in the account; what env values reference (`{{ RUNPOD_SECRET_<name> }}`). Never changes. */
  name: string
  description: string
  /** The sealed value. */
  value: string
  /** ISO 8601 of the last change of the value or description. */
  updatedAt: string
  /** 1 at creation, one more at each rotation of the value. */
  version: number
}

/** Secrets, one record per secret. */
export type SecretStore = OwnedCollection<SecretRecord>
