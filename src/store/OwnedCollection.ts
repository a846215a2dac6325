/** What every resource owned by one account has. */
export interface Owned {
  id: string
  accountId: string
  /** ISO 8601. */
  createdAt: string
}

/**
 * Storage of one kind of account-owned resource. Reads never filter by account on their own: services check
 * ownership so that foreign and missing resources produce the same answer. Lists are oldest first.
 */
export interface OwnedCollection<T extends Owned> {
  /** Fails when the id exists. */
  insert(record: T): Promise<void>
  get(id: string): Promise<T | undefined>
  /** The account's records, oldest first. */
  list(accountId: string): Promise<T[]>
  /** Replaces the stored record; false when it does not exist. */
  update(record: T): Promise<boolean>
  delete(id: string): Promise<boolean>
}
