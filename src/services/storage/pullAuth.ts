import type { RegistryCredentials } from './RegistryService.js'
import type { WorkloadSpec } from '../../runtime/RuntimeDriver.js'

/**
 * Credentials to pull `ep.image` with the endpoint's registry credential: the server is the image's
 * registry host (Docker Hub when the reference names none).
 */
export async function pullAuth(
  registries: { credentials(accountId: string, id: string): Promise<RegistryCredentials> },
  ep: { accountId: string; image: string; registry: string | null },
): Promise<WorkloadSpec['pullAuth']> {
  if (!ep.registry) return null
  const { username, password } = await registries.credentials(ep.accountId, ep.registry)
  return { username, password, server: registryHost(ep.image) }
}

/** The registry host of an image reference: its first path part when that looks like a host. */
export function registryHost(image: string): string {
  const first = image.split('/')[0]
  const isHost = image.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost')
  return isHost ? first : 'docker.io'
}
