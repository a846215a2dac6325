import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  hitCount?: number
  children?: number[]
}
interface CpuProfile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
  startTime: number
  endTime: number
}

/** One line of a CPU profile summary: a function (or area) and its share of the sampled time. */
export interface ProfileEntry {
  name: string
  selfMs: number
  percent: number
}

export interface ProfileSummary {
  totalMs: number
  /** Share of the time the process was busy (not idle in the event loop). */
  busyPercent: number
  functions: ProfileEntry[]
  areas: ProfileEntry[]
}

/**
 * Reads the one .cpuprofile a process wrote into `dir` and summarizes it, from the first sample inside a
 * function named `from` (when given: start-up, module loading and schema compilation are left out).
 */
export function summarizeProfileDir(
  dir: string,
  from?: string,
  top = Number(process.env.HANGAR_BENCH_PROFILE_TOP) || 15,
): ProfileSummary {
  // CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile: thread 0 is the main thread (others: worker threads).
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))
  const file = files.find((f) => /\.\d+\.0\.\d+\.cpuprofile$/.test(f)) ?? files[0]
  if (!file) throw new Error(`no .cpuprofile in ${dir}`)
  return summarizeProfile(JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile, top, from)
}

/**
 * Self time per function (name + file:line) and per area (our source files, each package, node
 * internals, garbage collection, native), from the sample timeline of a V8 CPU profile.
 */
export function summarizeProfile(p: CpuProfile, top = 15, from?: string): ProfileSummary {
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const inside = (id: number | undefined): boolean => {
    for (; id !== undefined; id = parent.get(id)) if (byId.get(id)!.callFrame.functionName === from) return true
    return false
  }
  let start = 0
  if (from) while (start < p.samples.length && !inside(p.samples[start])) start++
  const selfUs = new Map<number, number>()
  for (let i = start; i < p.samples.length; i++) {
    // timeDeltas[i + 1] is the time from sample i to the next: sample i's node ran for it (as DevTools counts).
    const dt = p.timeDeltas[i + 1] ?? 0
    selfUs.set(p.samples[i], (selfUs.get(p.samples[i]) ?? 0) + dt)
  }
  const fns = new Map<string, number>()
  const areas = new Map<string, number>()
  let total = 0
  let idle = 0
  for (const [id, us] of selfUs) {
    const n = byId.get(id)!
    const { functionName, url, lineNumber } = n.callFrame
    total += us
    if (functionName === '(idle)') {
      idle += us
      continue
    }
    const file = shortUrl(url)
    const key = file ? `${functionName || '(anonymous)'} ${file}:${lineNumber + 1}` : functionName || '(anonymous)'
    fns.set(key, (fns.get(key) ?? 0) + us)
    const area = areaOf(functionName, url)
    areas.set(area, (areas.get(area) ?? 0) + us)
  }
  const busy = total - idle
  const rank = (m: Map<string, number>, n: number): ProfileEntry[] =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, us]) => ({ name, selfMs: Math.round(us / 1000), percent: Math.round((us / busy) * 1000) / 10 }))
  return {
    totalMs: Math.round(total / 1000),
    busyPercent: Math.round((busy / total) * 1000) / 10,
    functions: rank(fns, top),
    areas: rank(areas, 12),
  }
}

/**
 * Share (%) of the busy time of the one .cpuprofile in `dir` spent inside frames that `match` picks,
 * callees included (a sample counts once however many matching frames its stack has). Robust to load
 * from other programs in a way that CPU-time differences between runs are not: it is a ratio within
 * one process and one run.
 */
export function inclusiveShareDir(
  dir: string,
  match: (frame: { functionName: string; url: string }) => boolean,
  from?: string,
): number {
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))
  const file = files.find((f) => /\.\d+\.0\.\d+\.cpuprofile$/.test(f)) ?? files[0]
  if (!file) throw new Error(`no .cpuprofile in ${dir}`)
  const p = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const inside = new Map<number, boolean>()
  const isInside = (id: number): boolean => {
    let r = inside.get(id)
    if (r === undefined) {
      const up = parent.get(id)
      r = match(byId.get(id)!.callFrame) || (up !== undefined && isInside(up))
      inside.set(id, r)
    }
    return r
  }
  // From the first sample inside `from` (start-up and module loading left out), as summarizeProfile does.
  let start = 0
  if (from) {
    const within = (id: number | undefined): boolean => {
      for (; id !== undefined; id = parent.get(id)) if (byId.get(id)!.callFrame.functionName === from) return true
      return false
    }
    while (start < p.samples.length && !within(p.samples[start])) start++
  }
  let busy = 0
  let matched = 0
  for (let i = start; i < p.samples.length; i++) {
    const dt = p.timeDeltas[i + 1] ?? 0
    if (byId.get(p.samples[i])!.callFrame.functionName === '(idle)') continue
    busy += dt
    if (isInside(p.samples[i])) matched += dt
  }
  return busy ? (matched / busy) * 100 : 0
}

function shortUrl(url: string): string {
  if (!url) return ''
  const nm = url.lastIndexOf('node_modules/')
  if (nm >= 0) return url.slice(nm + 'node_modules/'.length)
  const dist = url.indexOf('/dist/')
  if (dist >= 0) return url.slice(dist + 1)
  return url.replace(/^file:\/\//, '')
}

function areaOf(fn: string, url: string): string {
  if (fn === '(garbage collector)') return 'garbage collection'
  if (fn === '(program)') return 'native / program'
  if (!url) return `native (${fn || 'anonymous'})`
  if (url.startsWith('node:')) return 'node internals'
  const nm = url.lastIndexOf('node_modules/')
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/')
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]
  }
  const dist = url.indexOf('/dist/')
  if (dist >= 0) return 'hangar ' + url.slice(dist + '/dist/'.length).replace(/\/[^/]+$/, '/')
  return url
}

/** Markdown tables of a summary. */
export function profileMarkdown(title: string, s: ProfileSummary): string {
  const lines = [
    `\n### ${title}\n`,
    `Sampled ${s.totalMs} ms, busy ${s.busyPercent} % of it. Shares below are of busy time.\n`,
    '| self time | % | function |',
    '|---|---|---|',
  ]
  for (const f of s.functions) lines.push(`| ${f.selfMs} ms | ${f.percent} | \`${f.name.replace(/\|/g, '\\|')}\` |`)
  lines.push('', '| area | self time | % |', '|---|---|---|')
  for (const a of s.areas) lines.push(`| ${a.name} | ${a.selfMs} ms | ${a.percent} |`)
  return lines.join('\n')
}
