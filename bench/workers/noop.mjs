// Bench worker `bench/noop:latest`: a no-op handler on Hangar's TypeScript worker SDK (the built dist),
// running HANGAR_BENCH_CONCURRENCY jobs at once (batched takes above 1).
import { serve } from '../../dist/worker/index.js'

const concurrency = Number(process.env.HANGAR_BENCH_CONCURRENCY ?? 1)
await serve({ handler: () => null, concurrency })
