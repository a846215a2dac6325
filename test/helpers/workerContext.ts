import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Value } from 'typebox/value'
import { Fleet, type Allocation } from '../../src/catalog/Fleet.js'
import type { EndpointRecord } from '../../src/domain/endpoints/endpoint.js'
import { ProcessDriver } from '../../src/runtime/process/ProcessDriver.js'
import type { Workload, WorkloadExit } from '../../src/runtime/RuntimeDriver.js'
import { WorkerLog } from '../../src/runtime/WorkerLog.js'
import { JobEvents } from '../../src/services/jobs/JobEvents.js'
import { JobLifecycle } from '../../src/services/jobs/JobLifecycle.js'
import { JobsConfig } from '../../src/services/jobs/jobsConfig.js'
import { silentLog } from '../../src/services/log.js'
import { CrashBackoff } from '../../src/services/workers/CrashBackoff.js'
import type { LiveWorker } from '../../src/services/workers/LiveWorker.js'
import { LiveWorkers } from '../../src/services/workers/LiveWorkers.js'
import type { WorkerServiceDeps } from '../../src/services/workers/types.js'
import type { WorkerContext } from '../../src/services/workers/WorkerContext.js'
import { WorkerLogArchive } from '../../src/services/workers/WorkerLogArchive.js'
import { newWorkerRecord, tokenHash } from '../../src/services/workers/workerRecord.js'
import { SqliteStore } from '../../src/store/sqlite/SqliteStore.js'
import type { WorkerRecord } from '../../src/store/WorkerStore.js'
import { ManualClock } from './clock.js'

/**
 * The state the parts of services/workers share (WorkerContext), on real parts: a SQLite store in a temp dir, a
 * one-host fleet ledger, job events and lifecycle, a process runtime (never asked to start anything here) and a
 * monotonic clock the test moves. `close()` removes it all.
 */
export function workerContext(overrides: Partial<WorkerServiceDeps> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'hangar-workers-'))
  const store = new SqliteStore(join(dir, 'hangar.db'))
  const clock = new ManualClock()
  const events = new JobEvents()
  let mono = 1_000
  const fleet = new Fleet([{ id: 'h1', dataCenterId: 'DC-1', vcpus: 16, memoryGb: 64, gpus: [] }])
  const described: string[] = []
  const config = Value.Default(JobsConfig, {}) as JobsConfig
  const deps: WorkerServiceDeps = {
    store,
    clock,
    events,
    config,
    catalog: { fleet, pools: () => new Map() },
    runtime: new ProcessDriver({
      dataDir: dir,
      images: {},
      hostEnv: {},
      sandbox: { kind: 'none', reason: 'unit test' },
    }),
    lifecycle: new JobLifecycle({ store, clock, events, webhooks: { delivery: () => null as never, notify() {} } }),
    networkVolumes: { pathOf: () => dir },
    installationId: 'test',
    baseUrl: () => 'http://127.0.0.1:1',
    log: silentLog,
    ...overrides,
  }
  const ctx: WorkerContext = {
    deps,
    mono: () => mono,
    live: new LiveWorkers(),
    http: new Map(),
    detached: new WeakSet(),
    endedLogs: new WorkerLogArchive((id) => join(dir, 'logs', id)),
    backoff: new CrashBackoff({ baseMs: config.crashBackoffMs, maxMs: config.crashBackoffMaxMs, now: () => mono }),
    describe: (w) => void described.push(`${w.id} ${w.phase}`),
  }
  return {
    ctx,
    store,
    fleet,
    events,
    config,
    /** Each `describe` call, as `<workerId> <phase>`. */
    described,
    /** Moves the monotonic clock. */
    advance: (ms: number) => void (mono += ms),
    close: async () => {
      await store.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** A CPU queue endpoint of account `a1`, as the store keeps it. */
export function cpuEndpoint(id = 'ep1'): EndpointRecord {
  return {
    id,
    accountId: 'a1',
    version: 1,
    image: 'hangar/sleep:latest',
    type: 'QUEUE',
    dataCenterIds: [],
    cpu: [{ id: 'cpu3c', vcpuCount: 2, memory: 4 }],
  } as Partial<EndpointRecord> as EndpointRecord
}

/**
 * A running workload as a runtime hands it over: its end is the test's to decide (`exit`), and `stop` ends it as
 * a stopped process would. `stops` records each stop's grace period.
 */
export function workload(ref = 'process:h1:1:test') {
  let exit!: (e: WorkloadExit) => void
  const exited = new Promise<WorkloadExit>((resolve) => (exit = resolve))
  const stops: number[] = []
  const handle: Workload = {
    ref,
    ports: [],
    exited,
    logs: new WorkerLog(null),
    stop: async (graceMs) => {
      stops.push(graceMs)
      exit({ code: null, signal: 'SIGTERM' })
      await exited
    },
  }
  return { handle, exit, stops }
}

/**
 * Stores a worker record of `ep` on `allocation`, as a start would have, without a runtime reference; its protocol
 * key is `key-<id>`.
 */
export async function storedWorker(
  ctx: WorkerContext,
  id: string,
  ep: EndpointRecord,
  allocation: Allocation,
): Promise<WorkerRecord> {
  const r = newWorkerRecord(id, ep, allocation, tokenHash(`key-${id}`), ctx.deps.clock.now())
  await ctx.deps.store.workers.insert(r)
  return r
}

/** The live worker `id`, or a failed expectation. */
export function liveWorker(ctx: WorkerContext, id: string): LiveWorker {
  const w = ctx.live.get(id)
  if (!w) throw new Error(`worker ${id} is not live`)
  return w
}
