/** Sample worker `hangar/fail:latest`: every job fails with `input.message`. */
import { serve } from '../worker/index.js'

await serve({
  handler: (job) => {
    throw new Error((job.input as { message?: string } | undefined)?.message ?? 'this worker always fails')
  },
})
