import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'vitest'
import { DockerDriver } from '../src/runtime/docker/DockerDriver.js'
import { runtimeContract } from './contracts/runtime.js'
import { containerEnv, containerSkipReason } from './helpers/containers.js'

const skip = containerSkipReason()
if (skip) {
  console.warn(skip)
  describe('RuntimeDriver contract: docker (Podman)', () => it.skip(skip, () => undefined))
} else {
  runtimeContract('docker (Podman)', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'hangar-rt-docker-'))
    return {
      driver: () =>
        new DockerDriver({
          hostId: 'podman-a',
          dataDir,
          engine: {
            address: containerEnv.dockerHost!,
            network: 'host',
            gpus: 'none',
            cgroupParent: containerEnv.cgroupParent,
          },
        }),
      image: containerEnv.bbImage,
      hostId: 'podman-a',
      scratch: join(dataDir, 'scratch'),
      cleanup: async () => rmSync(dataDir, { recursive: true, force: true }),
    }
  })
}
