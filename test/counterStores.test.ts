import { randomUUID } from 'node:crypto'
import { MemoryCounterStore } from '../src/ratelimit/MemoryCounterStore.js'
import { RedisCounterStore } from '../src/ratelimit/RedisCounterStore.js'
import { counterStoreContract } from './contracts/counterStore.js'

counterStoreContract('memory', () => new MemoryCounterStore())
// The real Redis of the machine (CI has one too); a fresh prefix keeps runs apart.
counterStoreContract(
  'redis',
  () =>
    new RedisCounterStore(
      process.env.HANGAR_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
      `hangar-test:${randomUUID()}:`,
    ),
)
