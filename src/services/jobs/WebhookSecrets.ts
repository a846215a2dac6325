import { iso, type Clock } from '../../domain/clock.js'
import { notFound } from '../../domain/errors.js'
import { newWebhookSecret, webhookKey } from '../../domain/jobs/webhookSignature.js'
import type { Collections, Store } from '../../store/Store.js'
import type { WebhookSecretRecord } from '../../store/WebhookSecretStore.js'
import type { SecretBox } from '../SecretBox.js'

/** What WebhookSecrets needs. */
export interface WebhookSecretsDeps {
  store: Store
  clock: Clock
  /** Seals the secrets in the store (a copied database alone does not reveal them). */
  secrets: SecretBox
  /** How long the previous secret keeps signing after a rotation. */
  overlapMs: number
}

/** The answer to a rotation: the new secret (shown this once) and until when the old one still signs. */
export interface RotatedSecret {
  webhookSecret: string
  previousSecretExpiresAt: string
}

/**
 * The per-endpoint secrets that sign job webhooks (Standard Webhooks). A secret is shown once: when the
 * endpoint is created, or when it is rotated; the store keeps it sealed. After a rotation the previous
 * secret signs too, for `overlapMs`, so receivers can switch without refusing a delivery.
 */
export class WebhookSecrets {
  constructor(private readonly deps: WebhookSecretsDeps) {}

  /** Creates the secret of a new endpoint inside the transaction `tx`; returns it in clear. */
  async create(tx: Collections, endpoint: { id: string; accountId: string; createdAt: string }): Promise<string> {
    const secret = newWebhookSecret()
    await tx.webhookSecrets.insert({
      id: endpoint.id,
      accountId: endpoint.accountId,
      createdAt: endpoint.createdAt,
      secret: this.seal(endpoint.id, secret),
      previous: null,
      previousUntil: null,
    })
    return secret
  }

  /**
   * Replaces the endpoint's secret; the current one keeps signing for the overlap window. An endpoint made
   * before webhooks were signed gets its first secret.
   */
  async rotate(accountId: string, endpointId: string): Promise<RotatedSecret> {
    const secret = newWebhookSecret()
    const now = this.deps.clock.now()
    const until = now + this.deps.overlapMs
    await this.deps.store.transaction(async (tx) => {
      const endpoint = await tx.endpoints.get(endpointId)
      if (!endpoint || endpoint.accountId !== accountId) throw notFound('endpoint', endpointId)
      const held = await tx.webhookSecrets.get(endpointId)
      const sealed = this.seal(endpointId, secret)
      if (!held)
        await tx.webhookSecrets.insert({
          id: endpointId,
          accountId,
          createdAt: iso(now),
          secret: sealed,
          previous: null,
          previousUntil: null,
        })
      else await tx.webhookSecrets.update({ ...held, secret: sealed, previous: held.secret, previousUntil: until })
    })
    return { webhookSecret: secret, previousSecretExpiresAt: iso(until) }
  }

  /** The keys that sign the endpoint's webhooks at `now`, current first; none when it has no secret. */
  async signingKeys(endpointId: string, now: number): Promise<Buffer[]> {
    const held = await this.deps.store.webhookSecrets.get(endpointId)
    if (!held) return []
    const keys = [webhookKey(this.open(held, held.secret))]
    if (held.previous !== null && held.previousUntil !== null && now < held.previousUntil)
      keys.push(webhookKey(this.open(held, held.previous)))
    return keys
  }

  /** Deletes the endpoint's secret inside `tx` (with the endpoint). */
  async delete(tx: Collections, endpointId: string): Promise<void> {
    await tx.webhookSecrets.delete(endpointId)
  }

  private seal(endpointId: string, secret: string): string {
    return this.deps.secrets.seal(secret, `webhook-secret:${endpointId}`)
  }

  private open(record: WebhookSecretRecord, sealed: string): string {
    return this.deps.secrets.open(sealed, `webhook-secret:${record.id}`)
  }
}
