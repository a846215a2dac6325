import type Docker from 'dockerode'

/** Which engine serves the Docker Engine API: Docker itself or Podman's compatible service. */
export interface EngineKind {
  kind: 'docker' | 'podman'
  version: string
  apiVersion: string
}

/** From GET /version: Podman names a component `Podman Engine`; Docker's platform is `Docker Engine - ...`. */
export async function engineKind(docker: Docker): Promise<EngineKind> {
  const v = (await docker.version()) as {
    Version?: string
    ApiVersion?: string
    Platform?: { Name?: string }
    Components?: Array<{ Name?: string; Version?: string }>
  }
  const podman = v.Components?.find((c) => /podman/i.test(c.Name ?? ''))
  if (podman)
    return { kind: 'podman', version: podman.Version ?? v.Version ?? 'unknown', apiVersion: v.ApiVersion ?? 'unknown' }
  return { kind: 'docker', version: v.Version ?? 'unknown', apiVersion: v.ApiVersion ?? 'unknown' }
}
