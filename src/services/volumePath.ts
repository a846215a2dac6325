import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { EndpointRecord } from '../domain/endpoint.js'
import type { Store } from '../store/Store.js'

/** The directory of the endpoint's network volume (created on first use), or null when it has none. */
export async function volumePath(store: Store, dataDir: string, ep: Pick<EndpointRecord, 'networkVolumes'>): Promise<string | null> {
  const volumeId = ep.networkVolumes[0]
  if (!volumeId) return null
  const volume = await store.networkVolumes.get(volumeId)
  if (!volume?.dataCenter) return null
  const dir = join(dataDir, 'volumes', volume.dataCenter, volumeId)
  mkdirSync(dir, { recursive: true })
  return dir
}
