import type { PodMounts } from '../../contract/pod.js'
import type { Violations } from '../errors.js'

/** The caller's network volumes among those a body names, by id (anything absent is not theirs). */
export type VolumesView = ReadonlyMap<string, { dataCenter: string }>

/**
 * The mounts of a create. The body's `mounts` (when sent, even `{}`) replaces the template's persistent
 * mount; CPU pods ignore the template's mount. 400: both kinds, an explicit empty `network` array, a
 * `persistent` mount with `cpu`, a volume that is not the caller's or lies outside `dataCenterIds`.
 */
export function createMounts(
  body: PodMounts | undefined,
  template: { persistent?: { size: number; path: string } } | null,
  isCpu: boolean,
  dataCenterIds: readonly string[],
  volumes: VolumesView,
  conflicts: Violations,
): PodMounts {
  const mounts: PodMounts =
    body !== undefined
      ? structuredClone(body)
      : !isCpu && template?.persistent
        ? { persistent: { ...template.persistent } }
        : {}
  if (mounts.persistent && mounts.network) conflicts.add('mounts', 'set either persistent or network, not both')
  if (mounts.network?.length === 0)
    conflicts.add('mounts.network', 'must not be an empty array; omit it for no network volume')
  if (isCpu && mounts.persistent)
    conflicts.add('mounts.persistent', 'CPU pods support only the container disk and network volumes')
  for (const [i, m] of (mounts.network ?? []).entries()) {
    const volume = volumes.get(m.volumeId)
    if (!volume)
      conflicts.add(
        `mounts.network[${i}].volumeId`,
        `${JSON.stringify(m.volumeId)} is not one of your network volumes; see /v2/network-volumes`,
      )
    else if (dataCenterIds.length > 0 && !dataCenterIds.includes(volume.dataCenter)) {
      conflicts.add(
        `mounts.network[${i}].volumeId`,
        `volume ${JSON.stringify(m.volumeId)} is in data center ${volume.dataCenter}, which dataCenterIds does not include`,
      )
    }
  }
  return mounts
}

/**
 * The mounts after a PATCH (the spec's pod mount rules): omitted or `{}` leaves them unchanged; each kind
 * sent replaces that kind's entry. 400: both kinds, an explicit empty `network` array, a kind the pod was
 * not created with, a changed `volumeId`, a persistent mount made smaller (its files would not fit).
 */
export function patchMounts(current: PodMounts, body: PodMounts | undefined, conflicts: Violations): PodMounts {
  if (body === undefined || Object.keys(body).length === 0) return structuredClone(current)
  if (body.persistent && body.network) conflicts.add('mounts', 'set either persistent or network, not both')
  const next = structuredClone(current)
  if (body.network !== undefined) {
    if (body.network.length === 0)
      conflicts.add(
        'mounts.network',
        'must not be an empty array: a network volume cannot be detached by PATCH; omit mounts to leave it',
      )
    else if (!current.network?.length)
      conflicts.add(
        'mounts.network',
        'this pod was created without a network volume; a mount kind cannot be added later',
      )
    else if (body.network[0].volumeId !== current.network[0].volumeId) {
      conflicts.add(
        'mounts.network[0].volumeId',
        `cannot change from ${JSON.stringify(current.network[0].volumeId)} to ${JSON.stringify(body.network[0].volumeId)}; only the path can change`,
      )
    } else next.network = [{ ...body.network[0] }]
  }
  if (body.persistent !== undefined) {
    if (!current.persistent)
      conflicts.add(
        'mounts.persistent',
        'this pod was created without a persistent mount; a mount kind cannot be added later',
      )
    else if (body.persistent.size < current.persistent.size)
      conflicts.add(
        'mounts.persistent.size',
        `cannot shrink from ${current.persistent.size} GB to ${body.persistent.size} GB`,
      )
    else next.persistent = { ...body.persistent }
  }
  return next
}
