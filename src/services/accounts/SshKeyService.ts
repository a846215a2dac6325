import { iso, type Clock } from '../../domain/clock.js'
import type { SshKeyStore } from '../../store/SshKeyStore.js'
import type { Store } from '../../store/Store.js'

/**
 * The SSH public keys an account registers. Pods created with `startSsh` receive them (as PUBLIC_KEY)
 * at creation; changing the list never reaches pods that already exist.
 */
export class SshKeyService {
  private readonly docs: SshKeyStore

  constructor(private readonly deps: { store: Store; clock: Clock }) {
    this.docs = deps.store.sshKeys
  }

  /** The account's keys; `[]` when it registered none. */
  async keysOf(accountId: string): Promise<string[]> {
    return (await this.docs.get(accountId))?.keys ?? []
  }

  /** Replaces the whole list (exact duplicates dropped, first one kept) and returns it. */
  async replace(accountId: string, keys: string[]): Promise<string[]> {
    const unique = [...new Set(keys)]
    await this.deps.store.transaction(async (tx) => {
      const current = await tx.sshKeys.get(accountId)
      await tx.sshKeys.put({
        id: accountId,
        accountId,
        createdAt: current?.createdAt ?? iso(this.deps.clock.now()),
        keys: unique,
      })
    })
    return unique
  }
}
