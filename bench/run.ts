import { appendFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { commit, machine, ROOT, type BenchContext, type Row } from './lib.js'
import { limitOverhead } from './workloads/limitOverhead.js'
import { managementApi } from './workloads/managementApi.js'

/** Every workload, by the number the benchmark issue gives it. */
const WORKLOADS: Record<string, (ctx: BenchContext) => Promise<Row[]>> = {
  '6': managementApi,
  '8': limitOverhead,
}

async function main() {
  const args = process.argv.slice(2)
  const ctx: BenchContext = { quick: args.includes('--quick') }
  const only = args.find((a) => a.startsWith('--only='))?.slice(7).split(',')
  const rows: Row[] = []
  for (const [id, run] of Object.entries(WORKLOADS)) {
    if (only && !only.includes(id)) continue
    process.stderr.write(`workload ${id}...\n`)
    rows.push(...(await run(ctx)))
  }
  const meta = { date: new Date().toISOString(), machine: machine(), commit: commit(), quick: ctx.quick }
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true })
  writeFileSync(join(ROOT, 'bench/results/latest.json'), JSON.stringify({ ...meta, rows }, null, 2))
  const table = [
    `\n## ${meta.date.slice(0, 10)} · ${meta.commit}${ctx.quick ? ' · quick' : ''}\n`,
    `Machine: ${meta.machine}\n`,
    '| workload | metric | value | goal | met | note |',
    '|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.workload} | ${r.metric} | ${r.value} ${r.unit} | ${r.goal ?? ''} | ${r.met === undefined ? '' : r.met ? 'yes' : 'no'} | ${r.note ?? ''} |`),
  ].join('\n')
  console.log(table)
  // Quick runs are smoke tests (CI); only full runs are recorded.
  if (!ctx.quick) {
    const file = join(ROOT, 'bench/RESULTS.md')
    if (!existsSync(file)) writeFileSync(file, '# Benchmark results\n\nAppended by `npm run bench`; newest last.\n')
    appendFileSync(file, table + '\n')
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
