import { iso, type Clock } from '../domain/clock.js'
import type { DocumentStore, OwnedDocument, Store } from '../store/Store.js'

/** The account's keys as stored: one document per account, whose id is the account id. */
type SshKeysRecord = OwnedDocument & { keys: string[] }

/**
 * The SSH public keys an account registers. Pods created with `startSsh` receive them (as PUBLIC_KEY)
 * at creation; changing the list never reaches pods that already exist.
 */
export class SshKeyService {
  private readonly docs: DocumentStore<SshKeysRecord>

  constructor(private readonly deps: { store: Store; clock: Clock }) {
    this.docs = deps.store.sshKeys as DocumentStore<SshKeysRecord>
  }

  /** The account's keys; `[]` when it registered none. */
  async keysOf(accountId: string): Promise<string[]> {
    return (await this.docs.get(accountId))?.keys ?? []
  }

  /** Replaces the whole list (exact duplicates dropped, first one kept) and returns it. */
  async replace(accountId: string, keys: string[]): Promise<string[]> {
    const unique = [...new Set(keys)]
    await this.deps.store.transaction(async () => {
      const current = await this.docs.get(accountId)
      if (current) await this.docs.update({ ...current, keys: unique })
      else await this.docs.insert({ id: accountId, accountId, createdAt: iso(this.deps.clock.now()), keys: unique })
    })
    return unique
  }
}
