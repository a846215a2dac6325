import type Docker from 'dockerode'
import { messageOf, statusOf } from './engineErrors.js'
import { ImagePullError, type StartHooks, type WorkloadSpec } from '../RuntimeDriver.js'
import { ensureSampleImage, sampleOf } from './sampleImages.js'

/**
 * Makes sure the engine has `image`: nothing to do when it is there already (images are pulled once per
 * host, as `IfNotPresent`), else a pull with the spec's credentials, reporting bytes as `PULLING`.
 * Rejects with an ImagePullError saying why (`unauthorized`, `manifest unknown`, ...). A sample worker
 * (`hangar/echo`, see sampleImages.ts) is never pulled: it is built on the engine from what Hangar ships.
 */
export async function pullImage(
  docker: Docker,
  image: string,
  auth: WorkloadSpec['pullAuth'],
  hooks: StartHooks,
): Promise<'present' | 'pulled' | 'built'> {
  const sample = sampleOf(image)
  if (sample) {
    let built = false
    await ensureSampleImage(docker, sample, () => {
      built = true
      hooks.onPhase?.('PULLING', { bytes: 0 })
    }).catch((err: Error) => {
      throw new ImagePullError(err.message)
    })
    return built ? 'built' : 'present'
  }
  try {
    await docker.getImage(image).inspect()
    return 'present'
  } catch (err) {
    if (statusOf(err) !== 404) throw new ImagePullError(`cannot inspect image ${image}: ${messageOf(err)}`)
  }
  hooks.onPhase?.('PULLING', { bytes: 0 })
  const authconfig = auth ? { username: auth.username, password: auth.password, serveraddress: auth.server } : undefined
  let stream: NodeJS.ReadableStream
  try {
    stream = (await docker.pull(image, authconfig ? { authconfig } : {})) as NodeJS.ReadableStream
  } catch (err) {
    throw new ImagePullError(pullReason(messageOf(err)))
  }
  const layers = new Map<string, { current: number; total: number }>()
  let failure: string | null = null
  await new Promise<void>((resolve, reject) => {
    docker.modem.followProgress(
      stream,
      (err) => (err ? reject(err) : resolve()),
      (event: {
        id?: string
        error?: string
        errorDetail?: { message?: string }
        progressDetail?: { current?: number; total?: number }
      }) => {
        if (event.error || event.errorDetail?.message) failure = event.errorDetail?.message ?? event.error ?? 'failed'
        const d = event.progressDetail
        if (event.id && d?.current !== undefined) {
          layers.set(event.id, { current: d.current, total: d.total ?? 0 })
          let bytes = 0
          let totalBytes = 0
          for (const l of layers.values()) {
            bytes += l.current
            totalBytes += l.total
          }
          hooks.onPhase?.('PULLING', { bytes, totalBytes })
        }
      },
    )
  }).catch((err: unknown) => {
    failure ??= messageOf(err)
  })
  if (failure) throw new ImagePullError(pullReason(failure))
  return 'pulled'
}

/** A short reason from an engine's pull error: the registry's verdict where one can be recognised. */
export function pullReason(message: string): string {
  const m = message.toLowerCase()
  if (/unauthorized|authentication required|denied|401/.test(m)) return `unauthorized (${message.trim()})`
  if (/manifest unknown|not found|404|no such image/.test(m)) return `not found (${message.trim()})`
  return message.trim()
}
