import { round, startServer, until, type BenchContext, type BenchServer, type Row } from '../lib.js'
import { median } from './coldStart.js'

/**
 * Pods on the process runtime: create -> RUNNING (request sent to the pod's `startedAt`, the moment the
 * runtime reported it running) and stop -> start (the start request sent to RUNNING again), with the
 * sample pod program (hangar/pod, node). Median of several; each pod is terminated before the next.
 */
export async function pods(ctx: BenchContext): Promise<Row[]> {
  const runs = ctx.quick ? 2 : 9
  const s = await startServer({ logLevel: 'warn', fleet: { detectGpus: false } })
  const w = 'pods (process runtime)'
  try {
    const create: number[] = []
    const restart: number[] = []
    for (let i = 0; i < runs; i++) {
      const t0 = Date.now()
      const r = await s.api('POST', '/v2/pods', {
        name: `bench-${i}`,
        image: 'hangar/pod:latest',
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        ports: ['8080/http'],
      })
      if (r.status !== 201) throw new Error(`create pod: ${r.status} ${JSON.stringify(r.body)}`)
      const id = r.body.id as string
      create.push(Date.parse((await running(s, id)).startedAt) - t0)
      const stop = await s.api('POST', `/v2/pods/${id}/action`, { action: 'stop' })
      if (stop.status !== 200) throw new Error(`stop: ${stop.status} ${JSON.stringify(stop.body)}`)
      const t1 = Date.now()
      await s.api('POST', `/v2/pods/${id}/action`, { action: 'start' })
      restart.push(Date.parse((await running(s, id)).startedAt) - t1)
      await s.api('DELETE', `/v2/pods/${id}`)
    }
    const c = round(median(create))
    return [
      {
        workload: w,
        metric: 'create -> RUNNING',
        value: c,
        unit: 'ms',
        goal: '<= 100 ms',
        met: c <= 100,
        note: `median of ${runs}; all: ${create.join(', ')} ms`,
      },
      {
        workload: w,
        metric: 'stop -> start -> RUNNING',
        value: round(median(restart)),
        unit: 'ms',
        note: `median of ${runs}; all: ${restart.join(', ')} ms`,
      },
    ]
  } finally {
    await s.stop()
  }
}

async function running(s: BenchServer, id: string): Promise<{ startedAt: string }> {
  let pod: any
  await until(
    `pod ${id} RUNNING`,
    async () => (pod = (await s.api('GET', `/v2/pods/${id}`)).body).status === 'RUNNING',
    20_000,
    5,
  )
  return pod
}
