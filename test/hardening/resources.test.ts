import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { LABELS } from '../../src/runtime/labels.js'
import { probeCgroups } from '../../src/runtime/process/cgroups.js'
import { ProcessDriver } from '../../src/runtime/process/ProcessDriver.js'
import { groupUsage } from '../../src/runtime/process/procfs.js'
import { probeSandbox } from '../../src/runtime/process/sandbox.js'
import type { Workload, WorkloadSpec } from '../../src/runtime/RuntimeDriver.js'
import { until } from '../helpers/until.js'

/**
 * Issue 34, item 6: one tenant's memory hog, fork bomb and disk filler stop at their limits (the flavor's
 * memory, the process limit, the disk's size) while another tenant's program goes on. The control runs, with
 * limits off, show each of them going past the same limits.
 */
const cgroups = probeCgroups()
const sandbox = probeSandbox({ sandbox: 'auto', bwrap: 'bwrap' })
const work = mkdtempSync(join(tmpdir(), 'hangar-limits-'))
const PIDS = 48

function spec(id: string, account: string, script: string, over: Partial<WorkloadSpec> = {}): WorkloadSpec {
  return {
    id,
    kind: 'pod',
    hostId: 'local',
    labels: { [LABELS.account]: account },
    image: 'any',
    entrypoint: ['/bin/sh', '-c', script],
    cmd: [],
    env: {},
    gpus: { ids: [], virtual: true },
    resources: { vcpus: 1, memoryGb: 0 },
    mounts: [{ kind: 'disk', target: '/workspace', sizeGb: 0 }],
    ports: [],
    ...over,
  }
}

/** 256 MiB touched page by page, then `survived`. */
const HOG = `${JSON.stringify(process.execPath)} -e 'const keep=[];for(let i=0;i<256;i++){keep.push(Buffer.alloc(1<<20,1))}console.log("survived")'`
/** 150 background sleeps. */
const BOMB = 'n=0; while [ $n -lt 150 ]; do sleep 30 & n=$((n+1)); done; echo forked; sleep 30'
/** 40 MiB onto a 16 MiB disk, then waits. */
const FILLER = 'dd if=/dev/zero of=/workspace/fill bs=1M count=40 2>/dev/null; echo filled; sleep 30'

describe.skipIf(cgroups.kind === 'none')(
  "one tenant's hog, fork bomb and disk filler stop at their limits while another's work goes on",
  { timeout: 120_000 },
  () => {
    const started: { driver: ProcessDriver; w: Workload }[] = []
    afterAll(async () => {
      for (const { driver, w } of started) {
        await w.stop(0)
        await driver.remove(w.ref)
      }
      rmSync(work, { recursive: true, force: true })
    })

    const driverOf = (limited: boolean, name: string) =>
      new ProcessDriver({
        dataDir: join(work, name),
        images: {},
        hostEnv: { PATH: '/usr/bin:/bin' },
        sandbox,
        limits: limited ? { cgroups, pids: PIDS, diskCheckIntervalMs: 200 } : undefined,
      })

    async function start(driver: ProcessDriver, s: WorkloadSpec): Promise<Workload> {
      const w = await driver.start(s)
      started.push({ driver, w })
      return w
    }
    const lines = (w: Workload) => w.logs.history().map((l) => l.line)

    async function attacks(limited: boolean) {
      const driver = driverOf(limited, limited ? 'limited' : 'control')
      const bystander = await start(
        driver,
        spec(`bystander-${limited}`, 'acc_alice', 'while :; do echo tick; sleep 0.1; done'),
      )
      const hog = await start(
        driver,
        spec(`hog-${limited}`, 'acc_mallory', HOG, { resources: { vcpus: 1, memoryGb: 1 / 16 } }),
      )
      const bomb = await start(driver, spec(`bomb-${limited}`, 'acc_mallory', BOMB))
      const filler = await start(
        driver,
        spec(`filler-${limited}`, 'acc_mallory', FILLER, {
          mounts: [{ kind: 'disk', target: '/workspace', sizeGb: 1 / 64 }],
        }),
      )
      const hogEnd = await hog.exited
      // The most processes the bomb had at once, over 3 s (past its limit the shell cannot fork, and gives up).
      let bombProcesses = 0
      for (const t0 = Date.now(); Date.now() - t0 < 3_000; await new Promise((resolve) => setTimeout(resolve, 50))) {
        bombProcesses = Math.max(bombProcesses, groupUsage(Number(bomb.ref.split(':')[2])).processes)
      }
      await until(async () => lines(filler).includes('filled'), 30_000, 'the filler done')
      // The disk is measured every 200 ms.
      const fillerEnd = await Promise.race([
        filler.exited,
        new Promise<null>((resolve) => setTimeout(() => resolve(null), 3_000)),
      ])
      const ticks = lines(bystander).filter((l) => l === 'tick').length
      await new Promise((resolve) => setTimeout(resolve, 500))
      const ticksLater = lines(bystander).filter((l) => l === 'tick').length
      return { hog: { end: hogEnd, lines: lines(hog) }, bombProcesses, fillerEnd, ticks, ticksLater }
    }

    it('control: without limits the hog survives 256 MiB, the bomb makes its 150 processes, the filler keeps its 40 MiB', async () => {
      const r = await attacks(false)
      expect(r.hog.lines).toContain('survived')
      expect(r.bombProcesses).toBeGreaterThan(150)
      expect(r.fillerEnd).toBeNull()
    })

    it('with limits: the hog is killed at 64 MiB, the bomb stops at the process limit, the filler is stopped; the other tenant ticks on', async () => {
      const r = await attacks(true)
      expect(r.hog.lines).not.toContain('survived')
      expect(r.hog.end.reason).toMatch(/^out of memory: the workload's limit of 64 MiB was reached/)
      // The supervisor and its watcher are in the same cgroup.
      expect(r.bombProcesses).toBeLessThanOrEqual(PIDS)
      expect(r.fillerEnd?.reason).toMatch(/^disk limit: \/workspace holds 4\d\.\d MiB, over its 16\.0 MiB$/)
      expect(r.ticksLater).toBeGreaterThan(r.ticks)
    })
  },
)

if (cgroups.kind === 'none') console.log(`resource limit tests skipped: ${cgroups.reason}`)
