import { Type, type Static } from 'typebox'
import { Closed } from './common.js'

/** An OpenSSH public key line: `<type> <base64> [comment]`, e.g. `ssh-ed25519 AAAA... me@laptop`. */
export const SshPublicKey = Type.String({ pattern: '^(ssh|ecdsa|sk)-\\S+ \\S+([ \\t][^\\n\\r]*)?$', maxLength: 16384 })

/** PUT body: the whole new list (`[]` removes every key). */
export const PutSshKeys = Closed({ keys: Type.Array(SshPublicKey, { maxItems: 100 }) })
export type PutSshKeys = Static<typeof PutSshKeys>

/** The account's registered public keys, in the order they were given, without duplicates. */
export const SshKeys = Type.Object({ keys: Type.Array(Type.String()) })
export type SshKeys = Static<typeof SshKeys>
