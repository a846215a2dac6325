/**
 * Sample worker `hangar/sleep:latest`: waits `input.ms` (or `input.seconds`), stopping early when the
 * platform stops the job. For fault tests: `input.exit` ends the process with that code mid-job, and
 * `input.freezeMs` blocks it (no heartbeat) for that long.
 */
import { serve, sleep } from '../worker/index.js'

await serve({
  handler: async (job) => {
    const input = (job.input ?? {}) as { ms?: number; seconds?: number; exit?: number; freezeMs?: number }
    const ms = input.ms ?? (input.seconds ?? 1) * 1000
    console.log(`job ${job.id}: sleeping ${ms} ms`)
    if (input.freezeMs) {
      const until = Date.now() + input.freezeMs
      while (Date.now() < until) {
        // busy: the event loop (and with it the heartbeat) is blocked
      }
    }
    if (input.exit !== undefined) process.exit(input.exit)
    try {
      await sleep(ms, job.signal)
    } catch (err) {
      console.log(`job ${job.id}: stopped (${(err as Error).message})`)
      throw err
    }
    return { slept: ms }
  },
})
