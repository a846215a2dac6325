import { DomainError } from '../domain/errors.js'
import type { Collections } from '../store/Store.js'

/** A resource that others may hold, and how its deletion is refused while they do. */
export type HeldResource =
  | { kind: 'template'; id: string }
  | { kind: 'registry'; id: string }
  | { kind: 'networkVolume'; id: string }

/**
 * The "in use, refuse delete" rules in one place: throws 400 naming the holders while any resource of the
 * account holds `resource`. Call it with the transaction handle that then deletes, so no holder can
 * appear between the check and the delete. Collections that hold these resources (pods, clusters) add
 * their lookup here.
 */
export async function refuseDeleteInUse(tx: Collections, accountId: string, resource: HeldResource): Promise<void> {
  const ref =
    resource.kind === 'template'
      ? { templateId: resource.id }
      : resource.kind === 'registry'
        ? { registryId: resource.id }
        : { networkVolumeId: resource.id }
  const endpoints = await tx.endpoints.referencing(accountId, ref)
  if (endpoints.length === 0) return
  const holders = `endpoint${endpoints.length > 1 ? 's' : ''} ${endpoints.join(', ')}`
  const id = JSON.stringify(resource.id)
  const line =
    resource.kind === 'template'
      ? `template: ${id} is bound to ${holders}; delete them first`
      : resource.kind === 'registry'
        ? `registry: ${id} is used by ${holders}; change their registry first`
        : `networkVolume: ${id} is attached to ${holders}; detach it first`
  throw new DomainError('bad_request', line, [line])
}
