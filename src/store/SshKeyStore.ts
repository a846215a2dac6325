/** An account's registered SSH public keys: one record per account, whose `id` is the account id. */
export interface SshKeysRecord {
  id: string
  accountId: string
  createdAt: string
  keys: string[]
}

/** SSH public keys per account. */
export interface SshKeyStore {
  /** The account's record, or undefined when it never registered keys. */
  get(accountId: string): Promise<SshKeysRecord | undefined>
  /** Creates or replaces the account's record. */
  put(record: SshKeysRecord): Promise<void>
}
