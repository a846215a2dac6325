import { appendFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { commit, machine, ROOT, type BenchContext, type Row } from './lib.js'
import { bigBodies } from './workloads/bigBodies.js'
import { billing } from './workloads/billing.js'
import { bullmqThroughput } from './workloads/bullmq.js'
import { coldStart } from './workloads/coldStart.js'
import { containers } from './workloads/containers.js'
import { flashBoot } from './workloads/flashBoot.js'
import { fleet } from './workloads/fleet.js'
import { hangarThroughput } from './workloads/jobThroughput.js'
import { limitOverhead } from './workloads/limitOverhead.js'
import { loadBalancerBench } from './workloads/loadBalancer.js'
import { managementApi } from './workloads/managementApi.js'
import { pods } from './workloads/pods.js'
import { runsyncLatency } from './workloads/runsync.js'
import { sandboxStart } from './workloads/sandboxStart.js'
import { scale } from './workloads/scale.js'

/** Every workload, by the number the benchmark issue gives it. */
const WORKLOADS: Record<string, (ctx: BenchContext) => Promise<Row[]>> = {
  '1': hangarThroughput,
  // Compared with workload 1 of the same invocation, so it always runs with it.
  '2': bullmqThroughput,
  '3': runsyncLatency,
  '4': coldStart,
  '5': flashBoot,
  '6': managementApi,
  '7': scale,
  '8': limitOverhead,
  '9': containers,
  '10': bigBodies,
  pods,
  billing,
  lb: loadBalancerBench,
  sandbox: sandboxStart,
  fleet,
}

async function main() {
  const args = process.argv.slice(2)
  const ctx: BenchContext = { quick: args.includes('--quick'), sections: [], shared: {} }
  const only = args
    .find((a) => a.startsWith('--only='))
    ?.slice(7)
    .split(',')
  if (only?.includes('2') && !only.includes('1')) only.push('1')
  const rows: Row[] = []
  for (const [id, run] of Object.entries(WORKLOADS)) {
    if (only && !only.includes(id)) continue
    process.stderr.write(`workload ${id}...\n`)
    const t0 = performance.now()
    rows.push(...(await run(ctx)))
    process.stderr.write(`workload ${id}: ${Math.round(performance.now() - t0) / 1000} s\n`)
  }
  const meta = { date: new Date().toISOString(), machine: machine(), commit: commit(), quick: ctx.quick }
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true })
  writeFileSync(
    join(ROOT, 'bench/results/latest.json'),
    JSON.stringify({ ...meta, rows, sections: ctx.sections }, null, 2),
  )
  const table = [
    `\n## ${meta.date.slice(0, 10)} · ${meta.commit}${ctx.quick ? ' · quick' : ''}\n`,
    `Machine: ${meta.machine}\n`,
    '| workload | metric | value | goal | met | note |',
    '|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.workload} | ${r.metric} | ${Number.isNaN(r.value) ? '-' : `${r.value} ${r.unit}`} | ${r.goal ?? ''} | ${r.met === undefined ? '' : r.met ? 'yes' : 'no'} | ${r.note ?? ''} |`,
    ),
    ...ctx.sections,
  ].join('\n')
  console.log(table)
  // Quick runs are smoke tests (CI); only full runs are recorded (unless --no-record: exploratory runs).
  if (!ctx.quick && !args.includes('--no-record')) {
    const file = join(ROOT, 'bench/RESULTS.md')
    if (!existsSync(file)) writeFileSync(file, '# Benchmark results\n\nAppended by `npm run bench`; newest last.\n')
    appendFileSync(file, table + '\n')
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
