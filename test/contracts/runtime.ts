import { randomUUID } from 'node:crypto'
import { mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RuntimeDriver, Workload, WorkloadSpec } from '../../src/runtime/RuntimeDriver.js'
import { until } from '../helpers/until.js'

/** What the contract needs from an adapter under test. */
export interface RuntimeHarness {
  /** A driver; called again to stand for a restarted control plane (same engine, same data). */
  driver(): RuntimeDriver
  /** An image that has `/bin/sh` (its entrypoint is always given). */
  image: string
  hostId: string
  /** A host directory network volumes may be made in, visible to the tests. */
  scratch: string
  cleanup?(): Promise<void>
}

/**
 * The behaviour every RuntimeDriver adapter must have; run once per adapter. `timeoutMs` is each test's budget
 * where the adapter's starts and stops take longer than a process's (the suite's default otherwise).
 */
export function runtimeContract(name: string, setup: () => Promise<RuntimeHarness>, opts: { timeoutMs?: number } = {}) {
  describe(`RuntimeDriver contract: ${name}`, { timeout: opts.timeoutMs }, () => {
    let h: RuntimeHarness
    let driver: RuntimeDriver
    const started: Workload[] = []
    // Every workload of this run carries this label, so clean-up and `list` see only ours.
    const runLabel = { 'io.hangar.test-run': randomUUID() }

    function spec(script: string, over: Partial<WorkloadSpec> = {}): WorkloadSpec {
      return {
        id: `w${randomUUID().slice(0, 8)}`,
        kind: 'worker',
        hostId: h.hostId,
        labels: { ...runLabel },
        image: h.image,
        entrypoint: ['/bin/sh', '-c', script],
        cmd: [],
        env: {},
        gpus: { ids: [], virtual: false },
        resources: { vcpus: 0, memoryGb: 0 },
        mounts: [{ kind: 'disk', target: '/workspace', sizeGb: 1 }],
        ports: [],
        ...over,
      }
    }
    async function start(s: WorkloadSpec, r = driver): Promise<Workload> {
      const w = await r.start(s)
      started.push(w)
      return w
    }
    const output = (w: Workload) =>
      w.logs
        .history()
        .filter((l) => l.source === 'container')
        .map((l) => l.line)
    const lineFrom = (w: Workload, prefix: string) =>
      until(
        async () =>
          output(w)
            .find((l) => l.startsWith(prefix))
            ?.slice(prefix.length),
        20_000,
        `a line starting ${prefix}`,
      )

    beforeAll(async () => {
      h = await setup()
      driver = h.driver()
    }, 120_000)

    afterAll(async () => {
      if (!h) return
      for (const w of await h.driver().list(runLabel)) await driver.remove(w.ref)
      await h.cleanup?.()
    }, 60_000)

    it('runs the command with its env, logs its output line by line, and reports how it ended', async () => {
      const s = spec('echo "hello $GREETING"; echo to-stderr >&2; exit 3', { env: { GREETING: 'world' } })
      const w = await start(s)
      expect(w.ref).toEqual(expect.any(String))
      expect(await w.exited).toMatchObject({ code: 3 })
      expect(output(w)).toEqual(expect.arrayContaining(['hello world', 'to-stderr']))
      expect(w.logs.ended).toBe(true)
      // The log file the port names holds the same lines, and outlives the workload (ended workers' logs are read back from it).
      await driver.remove(w.ref)
      const file = readFileSync(driver.logPath(s.kind, s.id), 'utf8')
      expect(file).toContain('hello world')
      expect(file).toContain('to-stderr')
    })

    it('stops with SIGTERM, and forces a program that ignores it after the grace period', async () => {
      const polite = await start(spec('trap "echo got-term; exit 0" TERM; echo up; while true; do sleep 0.1; done'))
      await lineFrom(polite, 'up')
      await polite.stop(10_000)
      expect(await polite.exited).toMatchObject({ code: 0 })
      expect(output(polite)).toContain('got-term')

      const stubborn = await start(spec('trap "" TERM; echo up; while true; do sleep 0.1; done'))
      await lineFrom(stubborn, 'up')
      const t0 = Date.now()
      await stubborn.stop(300)
      const exit = await stubborn.exited
      expect(exit.signal === 'SIGKILL' || exit.code === 137).toBe(true)
      expect(Date.now() - t0).toBeGreaterThanOrEqual(250)
    })

    it('tells the program its ports and mounts by env; the disk is empty on every start, the volume shared', async () => {
      const volume = join(h.scratch, `vol-${randomUUID().slice(0, 8)}`)
      mkdirSync(volume, { recursive: true })
      const s = spec(
        'echo "port=$HANGAR_PORT_8000 named=$PORT"; ls "$HANGAR_DISK_PATH"; touch "$HANGAR_DISK_PATH/was-here"; echo shared > "$HANGAR_VOLUME_PATH/f"; echo done',
        {
          ports: [{ port: 8000, protocol: 'http', env: ['PORT'] }],
          mounts: [
            { kind: 'disk', target: '/workspace', sizeGb: 1 },
            { kind: 'volume', source: volume, target: '/runpod-volume' },
          ],
        },
      )
      const first = await start(s)
      await first.exited
      expect(first.ports).toEqual([
        { privatePort: 8000, publicPort: expect.any(Number), protocol: 'http', ip: expect.any(String) },
      ])
      // Told where to listen: the published port where the program shares the host's network, else its own.
      const port = first.ports[0].publicPort
      const told = output(first).find((l) => l.startsWith('port='))
      expect([`port=${port} named=${port}`, 'port=8000 named=8000']).toContain(told)
      expect(output(first)).not.toContain('was-here')
      expect(readFileSync(join(volume, 'f'), 'utf8')).toBe('shared\n')

      // The same workload started again (the ended one not removed yet) gets a fresh disk.
      const again = await start(s)
      await again.exited
      expect(output(again)).toContain('done')
      expect(output(again)).not.toContain('was-here')
      await driver.remove(first.ref)
      await driver.remove(again.ref)
    })

    it('keeps a persistent mount across starts until removePersistent', async () => {
      const name = `p-${randomUUID().slice(0, 8)}`
      const s = () =>
        spec(
          'cat "$HANGAR_PERSISTENT_PATH/kept" 2>/dev/null || echo none; echo kept > "$HANGAR_PERSISTENT_PATH/kept"',
          { kind: 'pod', mounts: [{ kind: 'persistent', name, target: '/workspace', sizeGb: 1 }] },
        )
      const a = await start(s())
      await a.exited
      expect(output(a)).toEqual(['none'])
      await driver.remove(a.ref)
      const b = await start(s())
      await b.exited
      expect(output(b)).toEqual(['kept'])
      await driver.remove(b.ref)
      await driver.removePersistent(h.hostId, name)
      const c = await start(s())
      await c.exited
      expect(output(c)).toEqual(['none'])
      await driver.remove(c.ref)
      await driver.removePersistent(h.hostId, name)
    })

    it('lists workloads by label, running or not, until they are removed', async () => {
      const mine = { ...runLabel, 'io.hangar.test-case': randomUUID() }
      const running = await start(spec('echo up; while true; do sleep 0.1; done', { labels: mine }))
      const ended = await start(spec('exit 0', { labels: { ...mine, extra: 'x' } }))
      await ended.exited
      await lineFrom(running, 'up')
      const listed = await driver.list(mine)
      expect(listed).toHaveLength(2)
      expect(listed.find((l) => l.ref === running.ref)).toMatchObject({
        running: true,
        labels: expect.objectContaining(mine),
      })
      expect(listed.find((l) => l.ref === ended.ref)).toMatchObject({
        running: false,
        labels: expect.objectContaining({ extra: 'x' }),
      })
      expect((await driver.list({ ...mine, extra: 'x' })).map((l) => l.ref)).toEqual([ended.ref])
      await driver.remove(running.ref)
      await driver.remove(ended.ref)
      await running.exited
      expect(await driver.list(mine)).toEqual([])
      // Unknown and already removed refs are no error.
      await driver.remove(running.ref)
    })

    it('reports the CPU and memory of a running workload, and null once it is gone', async () => {
      const w = await start(spec('echo up; while true; do :; done'))
      await lineFrom(w, 'up')
      const stats = await until(
        async () => {
          const s = await driver.stats(w.ref)
          return s && s.cpuPercent > 10 ? s : undefined
        },
        20_000,
        'a busy workload',
      )
      expect(stats.memoryBytes).toBeGreaterThan(0)
      await driver.remove(w.ref)
      await w.exited
      expect(await driver.stats(w.ref)).toBeNull()
    })

    it('is adopted by a restarted control plane: output continues, stop and exit work', async () => {
      const s = spec('trap "echo bye; exit 0" TERM; i=0; while true; do echo "tick $i"; i=$((i+1)); sleep 0.1; done')
      const w = await start(s)
      await lineFrom(w, 'tick 2')
      const restarted = h.driver()
      const adopted = await restarted.adopt(w.ref)
      expect(adopted).not.toBeNull()
      expect(adopted!.ref).toBe(w.ref)
      // Earlier output is there, and new output arrives.
      expect(output(adopted!)).toContain('tick 0')
      const seen = output(adopted!).length
      await until(async () => output(adopted!).length > seen + 2, 20_000, 'new output after adoption')
      await adopted!.stop(10_000)
      await adopted!.exited
      expect(output(adopted!)).toContain('bye')
      expect(adopted!.logs.ended).toBe(true)
      await restarted.remove(w.ref)
      expect(await restarted.adopt(w.ref)).toBeNull()
    })

    it('says why a program cannot start: a rejected start, or an exit at once with the reason in the log', async () => {
      let why: string
      try {
        const w = await start(spec('', { entrypoint: ['/no/such/program'] }))
        // Behind an init process the start succeeds and the init reports the failure.
        expect((await w.exited).code).not.toBe(0)
        why = w.logs
          .history()
          .map((l) => l.line)
          .join('\n')
      } catch (err) {
        why = (err as Error).message
      }
      expect(why).toMatch(/no\/such\/program/)
    })

    it('leaves nothing running once removed', async () => {
      for (const w of started) await driver.remove(w.ref)
      await Promise.all(started.map((w) => w.exited))
      expect((await driver.list(runLabel)).filter((l) => l.running)).toEqual([])
    })
  })
}
