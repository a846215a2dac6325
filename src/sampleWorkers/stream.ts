/**
 * Sample worker `hangar/stream:latest`: an async generator yielding `input.chunks` (a list) or `input.count`
 * numbered strings, `input.delayMs` apart.
 */
import { serve, sleep } from '../worker/index.js'

await serve({
  handler: async function* (job) {
    const input = (job.input ?? {}) as { chunks?: unknown[]; count?: number; delayMs?: number }
    const chunks = input.chunks ?? Array.from({ length: input.count ?? 3 }, (_, i) => `chunk ${i + 1}`)
    for (const chunk of chunks) {
      if (input.delayMs) await sleep(input.delayMs, job.signal)
      yield chunk
    }
  },
})
