// BullMQ worker process for workload 2: the same no-op handler and concurrency as the Hangar workers.
// argv: <redis url> <queue name> <concurrency>
import { Worker } from 'bullmq'

const [redisUrl, queue, concurrency] = process.argv.slice(2)
const u = new URL(redisUrl)
const connection = { host: u.hostname, port: Number(u.port || 6379), maxRetriesPerRequest: null }
const worker = new Worker(queue, async () => null, { connection, concurrency: Number(concurrency) })
await worker.waitUntilReady()
process.send?.('ready')
process.once('SIGTERM', async () => {
  await worker.close()
  process.exit(0)
})
