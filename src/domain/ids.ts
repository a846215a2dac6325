import { randomBytes } from 'node:crypto'

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789'

/** A random lower-case alphanumeric id (about 72 bits for the default length), optionally prefixed. */
export function newId(prefix = '', length = 14): string {
  const bytes = randomBytes(length)
  let out = prefix
  for (let i = 0; i < length; i++) out += ALPHABET[bytes[i] % ALPHABET.length]
  return out
}
