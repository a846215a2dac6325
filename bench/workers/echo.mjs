// Bench worker `bench/echo:latest`: returns its input as its output, on Hangar's TypeScript worker SDK (the
// built dist), running HANGAR_BENCH_CONCURRENCY jobs at once (workload 10: big bodies through and back).
import { serve } from '../../dist/worker/index.js'

const concurrency = Number(process.env.HANGAR_BENCH_CONCURRENCY ?? 1)
await serve({ handler: (job) => job.input, concurrency })
