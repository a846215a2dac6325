import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ProcessDriver } from '../src/runtime/process/ProcessDriver.js'
import { runtimeContract } from './contracts/runtime.js'

runtimeContract('process', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hangar-rt-process-'))
  return {
    driver: () => new ProcessDriver({ dataDir, images: {}, hostEnv: { PATH: process.env.PATH ?? '/usr/bin:/bin' } }),
    image: 'any/image-with-sh',
    hostId: 'local',
    scratch: join(dataDir, 'scratch'),
    cleanup: async () => rmSync(dataDir, { recursive: true, force: true }),
  }
})
