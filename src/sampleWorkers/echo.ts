/** Sample worker `hangar/echo:latest`: its output is its input. */
import { serve } from '../worker/index.js'

await serve({ handler: (job) => job.input })
