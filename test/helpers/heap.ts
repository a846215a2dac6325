import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

// A test process is not started with --expose-gc: the flag is set now and gc taken from a fresh context.
setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/** Runs full garbage collections, letting pending callbacks (and WeakRef targets) go in between. */
export async function collectGarbage(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10))
    gc()
  }
}

/**
 * Bytes of objects on the V8 heap after full garbage collections: the heap in use without its code spaces,
 * where code compiled as a process warms up goes (half of the growth over the first hundred requests of a
 * kind, and no state anyone keeps). The test's own fetches leave their timing entries (up to 250) in the
 * process's performance timeline: cleared first, as they are not the server's.
 */
export async function objectHeapAfterGc(): Promise<number> {
  performance.clearResourceTimings()
  await collectGarbage()
  return getHeapSpaceStatistics()
    .filter((s) => !s.space_name.startsWith('code'))
    .reduce((sum, s) => sum + s.space_used_size, 0)
}
