import type { Template } from '../contract/template.js'
import type { Owned, OwnedCollection } from './OwnedCollection.js'

/** A template as stored: the response shape plus its owner and creation time. */
export type TemplateRecord = Template & Owned

/** Templates of accounts (official ones ship in code, never in the store). */
export interface TemplateStore extends OwnedCollection<TemplateRecord> {
  /** Public templates of every account, oldest first. */
  listPublic(): Promise<TemplateRecord[]>
  /** Sets `registry: null` on the account's templates naming `registryId`; returns how many changed. */
  clearRegistry(accountId: string, registryId: string): Promise<number>
}
