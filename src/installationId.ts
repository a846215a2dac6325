import { randomUUID } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/**
 * The id of the installation whose data lives in `dataDir`, made on first start. Workloads are labelled with
 * it, so one machine's engine can serve several installations without one removing the other's containers.
 */
export function installationId(dataDir: string): string {
  const file = join(dataDir, 'installation-id')
  try {
    const id = readFileSync(file, 'utf8').trim()
    if (id) return id
  } catch {
    // first start
  }
  const id = randomUUID()
  writeFileSync(file, id + '\n', { flag: 'wx', mode: 0o600 })
  return id
}
