import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'

/** The limits of one workload; 0 = none of that kind. */
export interface WorkloadLimits {
  memoryBytes: number
  /** CPUs as a fraction of cores (1.5 = one and a half). */
  cpus: number
  pids: number
}

/**
 * Where this machine's cgroups let Hangar limit its workloads: cgroup v2 (one unified directory whose
 * controllers are enabled for Hangar's children) or v1 (a directory per controller: memory, cpu, pids), each
 * below the cgroup Hangar itself runs in, or the reason limits are not enforced (not root, no controllers).
 */
export type CgroupState =
  | { kind: 'v2'; dir: string }
  | { kind: 'v1'; dirs: { memory: string; cpu: string; pids: string } }
  | { kind: 'none'; reason: string }

const V1_CONTROLLERS = ['memory', 'cpu', 'pids'] as const
/** Below this process's own cgroup. */
const PARENT = 'hangar-workloads'

/** Finds and prepares the cgroups of this machine (made once at start; a failure says why). */
export function probeCgroups(): CgroupState {
  try {
    return existsSync('/sys/fs/cgroup/cgroup.controllers') ? probeV2() : probeV1()
  } catch (err) {
    return { kind: 'none', reason: (err as Error).message }
  }
}

function ownPaths(): Map<string, string> {
  const paths = new Map<string, string>()
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line)
    if (!m) continue
    for (const c of m[1] === '' ? [''] : m[1].split(',')) paths.set(c, m[2])
  }
  return paths
}

/** Mount point and root of each cgroup hierarchy, from mountinfo (`<controller>` or '' for v2). */
function mounts(): Map<string, { point: string; root: string }> {
  const found = new Map<string, { point: string; root: string }>()
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const [left, right] = line.split(' - ')
    if (!right) continue
    const f = left.split(' ')
    const [type, , options] = right.split(' ')
    if (type === 'cgroup2') found.set('', { point: f[4], root: f[3] })
    else if (type === 'cgroup')
      for (const o of options.split(','))
        if ((V1_CONTROLLERS as readonly string[]).includes(o)) found.set(o, { point: f[4], root: f[3] })
  }
  return found
}

/** This process's cgroup directory in a hierarchy: the mount point plus its path below the mount's root. */
function ownDir(mount: { point: string; root: string }, path: string): string {
  const dir = join(mount.point, relative(mount.root, path).replace(/^(\.\.\/?)+/, ''))
  return existsSync(join(dir, 'cgroup.procs')) ? dir : mount.point
}

function probeV1(): CgroupState {
  const own = ownPaths()
  const m = mounts()
  const dirs: Record<string, string> = {}
  for (const c of V1_CONTROLLERS) {
    const mount = m.get(c)
    if (!mount) return { kind: 'none', reason: `cgroup v1 without the ${c} controller mounted` }
    const dir = join(ownDir(mount, own.get(c) ?? '/'), PARENT)
    mkdirSync(dir, { recursive: true })
    dirs[c] = dir
  }
  return { kind: 'v1', dirs: dirs as { memory: string; cpu: string; pids: string } }
}

function probeV2(): CgroupState {
  const mount = mounts().get('')
  if (!mount) return { kind: 'none', reason: 'cgroup v2 is not mounted' }
  const own = ownDir(mount, ownPaths().get('') ?? '/')
  // Controllers can be handed to children only by a cgroup without processes of its own (or the root): Hangar's
  // parent must be delegated (systemd's Delegate=yes), and Hangar's own cgroup enable them for its subtree.
  const available = readFileSync(join(own, 'cgroup.controllers'), 'utf8').trim().split(/\s+/)
  const missing = ['memory', 'cpu', 'pids'].filter((c) => !available.includes(c))
  if (missing.length > 0)
    return { kind: 'none', reason: `cgroup v2: the ${missing.join(', ')} controller(s) are not delegated to ${own}` }
  const dir = join(own, PARENT)
  mkdirSync(dir, { recursive: true })
  try {
    writeFileSync(join(own, 'cgroup.subtree_control'), '+memory +cpu +pids')
    writeFileSync(join(dir, 'cgroup.subtree_control'), '+memory +cpu +pids')
  } catch (err) {
    return {
      kind: 'none',
      reason: `cgroup v2: cannot enable memory, cpu and pids below ${own} (${(err as Error).message}); run Hangar in a cgroup of its own with them delegated (systemd: Delegate=yes)`,
    }
  }
  return { kind: 'v2', dir }
}

/**
 * A workload's cgroup (one directory per v1 controller, or one v2 directory), made with its limits; processes
 * are put in with `enter` and the directories removed with `remove` once they have ended.
 */
export class WorkloadCgroup {
  private constructor(
    private readonly dirs: string[],
    private readonly state: Exclude<CgroupState, { kind: 'none' }>,
  ) {}

  static create(state: CgroupState, name: string, limits: WorkloadLimits): WorkloadCgroup | null {
    if (state.kind === 'none') return null
    const leaf = name.replace(/[^A-Za-z0-9_.-]/g, '_')
    if (state.kind === 'v2') {
      const dir = join(state.dir, leaf)
      mkdirSync(dir, { recursive: true })
      if (limits.memoryBytes > 0) {
        writeFileSync(join(dir, 'memory.max'), String(limits.memoryBytes))
        writeFileSync(join(dir, 'memory.swap.max'), '0')
      }
      if (limits.cpus > 0) writeFileSync(join(dir, 'cpu.max'), `${Math.round(limits.cpus * 100_000)} 100000`)
      if (limits.pids > 0) writeFileSync(join(dir, 'pids.max'), String(limits.pids))
      return new WorkloadCgroup([dir], state)
    }
    const dirs = {
      memory: join(state.dirs.memory, leaf),
      cpu: join(state.dirs.cpu, leaf),
      pids: join(state.dirs.pids, leaf),
    }
    for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true })
    if (limits.memoryBytes > 0) {
      writeFileSync(join(dirs.memory, 'memory.limit_in_bytes'), String(limits.memoryBytes))
      // Swap counts too where the kernel accounts it.
      try {
        writeFileSync(join(dirs.memory, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes))
      } catch {
        // no swap accounting: memory alone is limited
      }
    }
    if (limits.cpus > 0) {
      writeFileSync(join(dirs.cpu, 'cpu.cfs_period_us'), '100000')
      writeFileSync(join(dirs.cpu, 'cpu.cfs_quota_us'), String(Math.round(limits.cpus * 100_000)))
    }
    if (limits.pids > 0) writeFileSync(join(dirs.pids, 'pids.max'), String(limits.pids))
    return new WorkloadCgroup(Object.values(dirs), state)
  }

  /** The existing cgroup of a workload (adopted after a restart), if it is there. */
  static existing(state: CgroupState, name: string): WorkloadCgroup | null {
    if (state.kind === 'none') return null
    const leaf = name.replace(/[^A-Za-z0-9_.-]/g, '_')
    const dirs = state.kind === 'v2' ? [join(state.dir, leaf)] : Object.values(state.dirs).map((d) => join(d, leaf))
    return dirs.every((d) => existsSync(d)) ? new WorkloadCgroup(dirs, state) : null
  }

  /** Moves processes in (what they start later is in too). */
  enter(pids: number[]): void {
    for (const dir of this.dirs) {
      for (const pid of pids) {
        try {
          writeFileSync(join(dir, 'cgroup.procs'), String(pid))
        } catch (err) {
          // One that ended meanwhile is no matter; anything else is.
          if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err
        }
      }
    }
  }

  /** Whether the kernel killed a process of it for memory. */
  oomKilled(): boolean {
    try {
      const text =
        this.state.kind === 'v2'
          ? readFileSync(join(this.dirs[0], 'memory.events'), 'utf8')
          : readFileSync(join(this.dirs[0], 'memory.oom_control'), 'utf8')
      return Number(/oom_kill (\d+)/.exec(text)?.[1] ?? 0) > 0
    } catch {
      // The cgroup is gone (removed with its workload) or has no OOM record: no OOM kill to report.
      return false
    }
  }

  /** Removes its directories (once every process in them has ended; one still there keeps its directory). */
  remove(): void {
    for (const dir of this.dirs) {
      try {
        rmdirSync(dir)
      } catch {
        // busy (a process still ending) or gone: remove() of the workload tries again
      }
    }
  }
}
