import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { probeCgroups } from '../../src/runtime/process/cgroups.js'
import { ProcessDriver } from '../../src/runtime/process/ProcessDriver.js'
import { probeSandbox, type SandboxState } from '../../src/runtime/process/sandbox.js'
import type { WorkloadSpec } from '../../src/runtime/RuntimeDriver.js'
import type { BenchContext, Row } from '../lib.js'

/**
 * Workload `sandbox` (issue 34): what a sandboxed start costs, from the driver's start to the program's first
 * line of output, for a program that prints at once: in a sandbox on the host's network (the floor), with a
 * network of its own (pasta, the blackhole routes), and with that and its cgroups. The three take turns, so load
 * from other programs falls on all alike; the figures are medians, compared as ratios to the floor.
 */
export async function sandboxStart(ctx: BenchContext): Promise<Row[]> {
  const base = probeSandbox({ sandbox: 'auto', bwrap: 'bwrap', network: 'internet', pasta: 'pasta' })
  if (base.kind !== 'bwrap') return [{ workload: 'sandbox', metric: 'skipped', value: 0, unit: '', note: base.reason }]
  const cgroups = probeCgroups()
  const dir = mkdtempSync(join(tmpdir(), 'hangar-bench-sandbox-'))
  const variants: Record<string, { sandbox: SandboxState; limits: boolean }> = {
    'host network': { sandbox: { ...base, network: { mode: 'host' } }, limits: false },
    'own network': { sandbox: base, limits: false },
    'own network + limits': { sandbox: base, limits: cgroups.kind !== 'none' },
  }
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]))
  const rounds = ctx.quick ? 6 : 30
  try {
    for (let round = 0; round < rounds + 2; round++) {
      for (const [name, v] of Object.entries(variants)) {
        const driver = new ProcessDriver({
          dataDir: join(dir, name.replace(/\W+/g, '-')),
          images: {},
          hostEnv: { PATH: '/usr/bin:/bin' },
          sandbox: v.sandbox,
          limits: v.limits ? { cgroups, pids: 4096, diskCheckIntervalMs: 10_000 } : undefined,
        })
        const spec: WorkloadSpec = {
          id: `b${round}`,
          kind: 'worker',
          hostId: 'local',
          labels: { 'io.hangar.control-plane': 'http://127.0.0.1:8080' },
          image: 'bench',
          entrypoint: ['/bin/sh', '-c', 'echo up'],
          cmd: [],
          env: {},
          gpus: { ids: [], virtual: true },
          resources: { vcpus: 1, memoryGb: 1 },
          mounts: [{ kind: 'disk', target: '/workspace', sizeGb: 1 }],
          ports: [{ port: 8000, protocol: 'http' }],
        }
        const t0 = performance.now()
        const w = await driver.start(spec)
        await new Promise<void>((resolve) => {
          const timer = setInterval(() => {
            if (!w.logs.history().some((l) => l.line === 'up')) return
            clearInterval(timer)
            resolve()
          }, 1)
        })
        // The first two rounds warm the page cache and the programs up.
        if (round >= 2) times[name].push(performance.now() - t0)
        await w.exited
        await driver.remove(w.ref)
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  const floor = median(times['host network'])
  return Object.entries(times).flatMap(([name, xs]) => [
    {
      workload: 'sandbox',
      metric: `start to first output, ${name} (median of ${xs.length})`,
      value: Math.round(median(xs) * 10) / 10,
      unit: 'ms',
    },
    ...(name === 'host network'
      ? []
      : [
          {
            workload: 'sandbox',
            metric: `${name} / host network`,
            value: Math.round((median(xs) / floor) * 100) / 100,
            unit: 'x',
          },
        ]),
  ])
}
