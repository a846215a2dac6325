import type { Owned, OwnedCollection } from './OwnedCollection.js'

/**
 * The signing secrets of an endpoint's job webhooks (`id` is the endpoint's id), sealed with the SecretBox
 * like registry credentials. After a rotation the previous secret keeps signing until `previousUntil`.
 */
export interface WebhookSecretRecord extends Owned {
  /** The current secret (`whsec_...`), sealed. */
  secret: string
  /** The secret before the last rotation, sealed; null when there is none. */
  previous: string | null
  /** Epoch ms until which `previous` still signs. */
  previousUntil: number | null
}

/** Webhook signing secrets, one record per endpoint. */
export type WebhookSecretStore = OwnedCollection<WebhookSecretRecord>
