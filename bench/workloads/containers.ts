import Database from 'better-sqlite3'
import {
  accountKey,
  createQueueEndpoint,
  jobServerConfig,
  round,
  startServer,
  until,
  type BenchContext,
  type BenchServer,
  type Row,
} from '../lib.js'
import { median } from './coldStart.js'

/** A runtime to compare: the process driver, or Podman's Docker-compatible API (set up by .ci/setup-podman.sh). */
interface Runtime {
  name: string
  image: string
  config: Record<string, unknown>
}

/**
 * Workload 9: containers beside processes. For each runtime, in one run: cold starts (a new endpoint's
 * first job; "create -> job taken" runs from the worker's record, made as placement succeeds, to the job
 * taken by the worker, split into pull / create / boot by the workers view) and FlashBoot (a parked
 * worker reused: the /runsync round trip). Podman rows need HANGAR_TEST_DOCKER_HOST and the test images;
 * Kubernetes rows (a worker Pod, image present in containerd) HANGAR_TEST_KUBECONFIG.
 */
export async function containers(ctx: BenchContext): Promise<Row[]> {
  const runs = ctx.quick ? 2 : 7
  const runtimes: Runtime[] = [{ name: 'process', image: 'hangar/echo:latest', config: {} }]
  const socket = process.env.HANGAR_TEST_DOCKER_HOST
  if (socket) {
    const engine = {
      address: socket,
      network: 'host',
      gpus: 'none',
      cgroupParent: process.env.HANGAR_TEST_CGROUP_PARENT,
    }
    runtimes.push({ name: 'podman', image: 'localhost/hangar-test-worker:latest', config: { engine } })
  }
  // A worker Pod on the single-node cluster of .ci/setup-kubernetes.sh (host network, image imported into containerd).
  const kubeconfig = process.env.HANGAR_TEST_KUBECONFIG
  if (kubeconfig) {
    const kubernetes = {
      kubeconfig,
      hostNetwork: true,
      imagePullPolicy: 'Never',
      networkVolumes: 'hostPath',
      oversubscription: 8,
    }
    runtimes.push({
      name: 'kubernetes',
      image: 'localhost/hangar-test-worker:latest',
      config: { runtime: { kubernetes } },
    })
  }
  const rows: Row[] = []
  for (const rt of runtimes) rows.push(...(await measure(rt, runs)))
  if (!socket)
    rows.push({
      workload: '9 containers',
      metric: 'podman',
      value: NaN,
      unit: 'ms',
      note: 'not measured: HANGAR_TEST_DOCKER_HOST is not set (source .ci/setup-podman.sh)',
    })
  if (!kubeconfig)
    rows.push({
      workload: '9 containers',
      metric: 'kubernetes',
      value: NaN,
      unit: 'ms',
      note: 'not measured: HANGAR_TEST_KUBECONFIG is not set (source .ci/setup-kubernetes.sh)',
    })
  return rows
}

async function measure(rt: Runtime, runs: number): Promise<Row[]> {
  const w = '9 containers'
  const s = await startServer(jobServerConfig(rt.config))
  try {
    const key = await accountKey(s, 'bench', true)
    const cold: Array<{ taken: number; pullMs: number; createMs: number; bootMs: number }> = []
    for (let i = 0; i < runs; i++) cold.push(await oneColdStart(s, key, rt, i))
    const flash = await flashBootTimes(s, key, rt, runs)
    const taken = round(median(cold.map((c) => c.taken)))
    const parts = (k: 'pullMs' | 'createMs' | 'bootMs') => round(median(cold.map((c) => c[k])))
    const flashMed = flash.length ? round(median(flash), 1) : NaN
    return [
      {
        workload: w,
        metric: `cold start, create -> job taken (${rt.name})`,
        value: taken,
        unit: 'ms',
        goal: '<= 500 ms',
        met: taken <= 500,
        note: `median of ${runs}, ${rt.image}, image present; pull ${parts('pullMs')} / create ${parts('createMs')} / boot ${parts('bootMs')} ms; all: ${cold.map((c) => round(c.taken)).join(', ')} ms`,
      },
      {
        workload: w,
        metric: `FlashBoot /runsync (${rt.name})`,
        value: flashMed,
        unit: 'ms',
        goal: '<= 10 ms',
        met: flashMed <= 10,
        note: flash.length
          ? `median of ${flash.length} (parked worker reused); all: ${flash.map((t) => round(t, 1)).join(', ')} ms`
          : 'not measured: no worker was parked',
      },
    ]
  } finally {
    await s.stop()
  }
}

async function oneColdStart(s: BenchServer, key: string, rt: Runtime, i: number) {
  const ep = await createQueueEndpoint(s, key, rt.image, {
    name: `cold-${rt.name}-${i}`,
    workers: { min: 0, max: 1, idleTimeout: 60 },
  })
  const r = await s.api('POST', `/v2/${ep}/runsync`, { input: { i } }, key)
  if (r.status !== 200 || r.body.status !== 'COMPLETED')
    throw new Error(`cold /runsync (${rt.name}): ${r.status} ${JSON.stringify(r.body)}`)
  const view = (await s.api('GET', `/v2/serverless/${ep}/workers`, undefined, key)).body.workers[0]
  const db = new Database(s.dbFile, { readonly: true, fileMustExist: true })
  try {
    const job = db.prepare('SELECT started_at FROM jobs WHERE id = ?').get(r.body.id) as { started_at: number }
    const worker = db
      .prepare('SELECT created_at FROM workers WHERE endpoint_id = ? ORDER BY created_at LIMIT 1')
      .get(ep) as { created_at: number }
    const del = await s.api('DELETE', `/v2/serverless/${ep}`, undefined, key)
    if (del.status >= 300) throw new Error(`delete endpoint: ${del.status} ${JSON.stringify(del.body)}`)
    const active = db.prepare(
      `SELECT count(*) AS n FROM workers WHERE endpoint_id = ? AND state NOT IN ('EXITED', 'FAILED')`,
    )
    await until('the worker of a deleted endpoint to stop', () => (active.get(ep) as { n: number }).n === 0, 30_000, 50)
    const c = view?.coldStart ?? { pullMs: NaN, createMs: NaN, bootMs: NaN }
    return {
      taken: job.started_at - worker.created_at,
      pullMs: c.pullMs,
      createMs: c.createMs,
      bootMs: c.bootMs ?? NaN,
    }
  } finally {
    db.close()
  }
}

async function flashBootTimes(s: BenchServer, key: string, rt: Runtime, runs: number): Promise<number[]> {
  const ep = await createQueueEndpoint(s, key, rt.image, {
    name: `flash-${rt.name}`,
    flashboot: 'FLASHBOOT',
    workers: { min: 0, max: 1, idleTimeout: 1 },
  })
  const runsync = async (i: number) => {
    const t0 = performance.now()
    const r = await s.api('POST', `/v2/${ep}/runsync`, { input: { i } }, key)
    if (r.status !== 200 || r.body.status !== 'COMPLETED')
      throw new Error(`/runsync: ${r.status} ${JSON.stringify(r.body)}`)
    return performance.now() - t0
  }
  await runsync(-1)
  const times: number[] = []
  for (let i = 0; i < runs; i++) {
    try {
      await until(
        'a parked worker',
        async () =>
          ((await s.api('GET', `/v2/serverless/${ep}/workers`, undefined, key)).body?.summary?.parked ?? 0) >= 1,
        15_000,
        50,
      )
    } catch {
      break
    }
    times.push(await runsync(i))
  }
  await s.api('DELETE', `/v2/serverless/${ep}`, undefined, key)
  return times
}
