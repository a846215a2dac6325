import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'

const KEY_BYTES = 32
const IV_BYTES = 12
const TAG_BYTES = 16
const VERSION = 'v1'

/**
 * Encrypts small secrets (registry credentials) for storage with AES-256-GCM. The key lives in a file of
 * its own beside the database, so a copied database alone reveals nothing; losing the key file makes the
 * stored secrets unreadable (they must then be entered again).
 */
export class SecretBox {
  private constructor(private readonly key: Buffer) {}

  /**
   * Loads the key from `file` (base64 of 32 bytes), creating it with mode 0600 on first use.
   * Throws when an existing file does not hold a valid key, rather than replacing it and orphaning
   * every secret sealed with the old one.
   */
  static open(file: string): SecretBox {
    mkdirSync(dirname(file), { recursive: true })
    try {
      // 'wx' fails when the file exists, so two starts racing on a fresh data dir cannot both write a key.
      writeFileSync(file, randomBytes(KEY_BYTES).toString('base64') + '\n', { mode: 0o600, flag: 'wx' })
      chmodSync(file, 0o600)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    }
    const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64')
    if (key.length !== KEY_BYTES)
      throw new Error(`${file} does not hold a ${KEY_BYTES}-byte base64 key; restore the original key file`)
    return new SecretBox(key)
  }

  /**
   * Encrypts `plaintext`. `context` (e.g. `registry:<id>:password`) is authenticated but not stored, so a
   * sealed value copied to another record or field fails to open instead of leaking there.
   */
  seal(plaintext: string, context: string): string {
    const iv = randomBytes(IV_BYTES)
    const cipher = createCipheriv('aes-256-gcm', this.key, iv)
    cipher.setAAD(Buffer.from(context, 'utf8'))
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
    return `${VERSION}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`
  }

  /** Decrypts a value from `seal` with the same `context`; throws when it was tampered with or sealed elsewhere. */
  open(sealed: string, context: string): string {
    const [version, payload] = sealed.split(':', 2)
    if (version !== VERSION || !payload) throw new Error('unrecognised sealed secret')
    const raw = Buffer.from(payload, 'base64')
    const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, IV_BYTES))
    decipher.setAAD(Buffer.from(context, 'utf8'))
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES))
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8')
  }
}
