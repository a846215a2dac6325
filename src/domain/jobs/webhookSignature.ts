import { createHmac, randomBytes } from 'node:crypto'

/** Prefix of Standard Webhooks secrets; the rest is the base64 of the key bytes. */
const PREFIX = 'whsec_'
const KEY_BYTES = 32

/** A new signing secret, `whsec_<base64 of 32 random bytes>` (what the `standardwebhooks` package takes). */
export function newWebhookSecret(): string {
  return PREFIX + randomBytes(KEY_BYTES).toString('base64')
}

/** The key bytes of a `whsec_` secret. */
export function webhookKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64')
}

/**
 * The `webhook-signature` header of Standard Webhooks: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` for
 * each key, space-separated (two during a rotation's overlap, so receivers holding either secret verify).
 * `timestamp` is in seconds.
 */
export function signWebhook(keys: readonly Buffer[], id: string, timestamp: number, body: string): string {
  return keys
    .map((k) => `v1,${createHmac('sha256', k).update(`${id}.${timestamp}.${body}`).digest('base64')}`)
    .join(' ')
}
