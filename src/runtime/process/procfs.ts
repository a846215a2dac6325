import { readdirSync, readFileSync } from 'node:fs'

// Linux reports CPU times in clock ticks of 1/100 s and memory in pages of 4 KiB on every platform Node runs on.
const TICKS_PER_SECOND = 100
const PAGE_BYTES = 4096

/** The fields of /proc/<pid>/stat after the command name (field 3 onwards), or null when it is gone. */
function statFields(pid: number | string): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name may hold spaces and parentheses; fields after the last ')' are fixed.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  } catch {
    // The process has ended (or there is no procfs): the caller reads null as gone.
    return null
  }
}

/**
 * `<boot id>:<start time>` of a process (Linux /proc), or null where that cannot be read. Together with the
 * pid it names one process across the machine's uptime.
 */
export function processStartMarker(pid: number): string | null {
  const fields = statFields(pid)
  // A zombie has ended: it is no longer the program we ran.
  if (!fields || fields[0] === 'Z') return null
  try {
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()
    return fields[19] ? `${boot}:${fields[19]}` : null
  } catch {
    // No boot id on this kernel: no marker, as documented (callers then go by the pid alone).
    return null
  }
}

/** Sends `signal` to the process group led by `pid` (or to `pid` alone when it leads none). */
export function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal)
  } catch {
    // No such group (`pid` leads none): signal the process itself.
    try {
      process.kill(pid, signal)
    } catch {
      // already gone
    }
  }
}

/** CPU seconds used so far and resident bytes of every live process in group `pgid`. */
export function groupUsage(pgid: number): { cpuSeconds: number; rssBytes: number; processes: number } {
  let ticks = 0
  let pages = 0
  let processes = 0
  let entries: string[] = []
  try {
    entries = readdirSync('/proc')
  } catch {
    // No procfs: no usage can be read, which reads as an idle group.
    return { cpuSeconds: 0, rssBytes: 0, processes: 0 }
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue
    const f = statFields(name)
    if (!f || Number(f[2]) !== pgid || f[0] === 'Z') continue
    processes++
    ticks += Number(f[11]) + Number(f[12])
    pages += Number(f[21])
  }
  return { cpuSeconds: ticks / TICKS_PER_SECOND, rssBytes: pages * PAGE_BYTES, processes }
}

/** Field 22 of /proc/<pid>/stat (start time in ticks since boot), as DataDirLock records it; null when gone. */
export function startTicks(pid: number): string | null {
  return statFields(pid)?.[19] ?? null
}

/** Live processes of group `pgid` with their command names. */
export function groupMembers(pgid: number): { pid: number; ppid: number; comm: string }[] {
  const out: { pid: number; ppid: number; comm: string }[] = []
  let entries: string[] = []
  try {
    entries = readdirSync('/proc')
  } catch {
    // No procfs: no members can be listed.
    return out
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue
    let stat: string
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8')
    } catch {
      // Ended between the listing and this read: not a member any more.
      continue
    }
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    if (Number(f[2]) !== pgid || f[0] === 'Z') continue
    out.push({ pid: Number(name), ppid: Number(f[1]), comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) })
  }
  return out
}

/** The command line of a process (arguments joined by NUL), or '' when it is gone. */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8')
  } catch {
    // Gone: '' as documented.
    return ''
  }
}
