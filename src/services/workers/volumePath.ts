import { mkdirSync } from 'node:fs'
import type { EndpointRecord } from '../../domain/endpoints/endpoint.js'
import type { Store } from '../../store/Store.js'
import type { NetworkVolumeService } from '../storage/NetworkVolumeService.js'

/** The directory of the endpoint's network volume (created on first use), or null when it has none. */
export async function volumePath(
  store: Store,
  volumes: Pick<NetworkVolumeService, 'pathOf'>,
  ep: Pick<EndpointRecord, 'networkVolumes'>,
): Promise<string | null> {
  const volumeId = ep.networkVolumes[0]
  if (!volumeId) return null
  const volume = await store.networkVolumes.get(volumeId)
  if (!volume?.dataCenter) return null
  const dir = volumes.pathOf(volume)
  mkdirSync(dir, { recursive: true })
  return dir
}
