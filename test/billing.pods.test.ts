import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { ManualClock } from './helpers/clock.js'
import { createPod, terminateAll, waitPod } from './helpers/pods.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const H = 3_600_000
const T0 = Date.parse('2026-05-04T10:00:00Z')

describe('pod billing on the injected clock', () => {
  const servers: TestServer[] = []
  const dataDir = mkdtempSync(join(tmpdir(), 'hangar-billing-pods-'))
  afterAll(async () => {
    const s = servers[servers.length - 1]
    if (s) {
      await terminateAll(s)
      await s.stop()
    }
    rmSync(dataDir, { recursive: true, force: true })
  })
  const day = async (s: TestServer, query = '') => {
    await s.hangar.meter.flush()
    return (await s.api('GET', `/v2/billing/pods?startTime=2026-05-04T00:00:00Z&endTime=2026-05-05T00:00:00Z${query}`))
      .body
  }

  it('bills GPUs only while RUNNING and the disks while the pod exists, then nothing; and across a restart without gap or double', async () => {
    const clock = new ManualClock()
    clock.set(T0)
    let s = await startTestServer({}, { clock, dataDir })
    servers.push(s)
    const pod = await createPod(s, {
      name: 'billed',
      image: 'hangar/pod:latest',
      ports: ['8080/http'],
      gpu: { id: 'NVIDIA L4' },
      disk: 20,
      mounts: { persistent: { size: 10, path: '/workspace' } },
    })
    await waitPod(s, pod.id, 'RUNNING')
    // RUNNING at T0 for 30 minutes: NVIDIA L4 secure 0.43 USD/h -> 215,000 micro-dollars.
    clock.advance(H / 2)
    expect((await s.api('POST', `/v2/pods/${pod.id}/action`, { action: 'stop' })).status).toBe(200)
    await waitPod(s, pod.id, 'EXITED')
    clock.advance(H)
    // Stopped: compute stays, disks go on. 1.5 h of 20 GB container disk (0.10/GB-month): 4109 (4109.6);
    // of the 10 GB persistent mount: 2054 (2054.8).
    let r = await day(s, '&grouping=podId')
    expect(r.records).toEqual([
      {
        startTime: '2026-05-04T00:00:00.000Z',
        endTime: '2026-05-05T00:00:00.000Z',
        podId: pod.id,
        gpuId: 'NVIDIA L4',
        totalAmount: 0.221163,
        gpuAmount: 0.215,
        cpuAmount: 0,
        diskAmount: 0.006163,
      },
    ])
    expect(r.metadata.uniquePodCount).toBe(1)

    // Started again, then the control plane restarts (the pod runs on, and is adopted).
    expect((await s.api('POST', `/v2/pods/${pod.id}/action`, { action: 'start' })).status).toBe(200)
    await waitPod(s, pod.id, 'RUNNING')
    clock.advance(H)
    await s.stop()
    clock.advance(H)
    s = await startTestServer({}, { clock, dataDir })
    servers.push(s)
    await waitPod(s, pod.id, 'RUNNING')
    clock.advance(H)
    // 3 more hours RUNNING (one of them with the control plane down): 3 x 430,000; disks for 4.5 h in all.
    r = await day(s)
    expect(r.records.map((x: any) => [x.gpuId, x.gpuAmount])).toEqual([['NVIDIA L4', usd(215_000 + 3 * 430_000)]])
    expect(r.metadata.totals.diskAmount).toBe(
      usd(Math.floor((2_000_000 * 4.5) / 730) + Math.floor((1_000_000 * 4.5) / 730)),
    )
    const open = (await s.hangar.store.usage.listOpen()).filter((i) => i.resourceId === pod.id)
    expect(open.map((i) => [i.partId, i.component]).sort()).toEqual([
      ['compute', 'gpu'],
      ['disk', 'disk'],
      ['disk', 'disk'],
    ])

    // Terminated: nothing more, ever.
    expect((await s.api('DELETE', `/v2/pods/${pod.id}`)).status).toBe(204)
    const final = (await day(s)).metadata.totals
    clock.advance(5 * H)
    expect((await day(s)).metadata.totals).toEqual(final)
    expect((await s.hangar.store.usage.listOpen()).filter((i) => i.resourceId === pod.id)).toEqual([])
  }, 90_000)
})

function usd(micros: number): number {
  return micros / 1e6
}
