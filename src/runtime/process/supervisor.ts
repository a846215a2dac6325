import { commandLine, groupMembers, signalGroup } from './procfs.js'

/** `$0` of the supervisor shell: how a workload started under it is recognised (`/proc/<pid>/cmdline`). */
export const SUPERVISOR_NAME = 'hangar-supervise'

/**
 * The small supervisor every process workload runs under (POSIX sh, about 1 MiB per workload). It runs the
 * command in the foreground and ends as the command ended (same exit code, or the same signal). For workers
 * (`limit` > 0 seconds) a watcher checks once a second that a control plane of this data dir still runs: the one
 * that started it, or one listed in `<dataDir>/control-planes/` (a file per process, named by its pid and
 * holding its start ticks: a restarted control plane, or another replica, which adopts it); after `limit`
 * seconds without one it kills the whole workload (SIGKILL to the process group), whatever SDK the worker uses.
 * The watcher ignores SIGTERM, so a stop reaches only the program.
 * When the command ends, or the watcher ends the worker, it also ends the sandbox's network (pasta, by the pid
 * file it wrote: pasta does not notice its namespace going, and no control plane is there to end it).
 * Arguments: that directory, pid and start ticks of the starting control plane, limit, pasta's pid file (or
 * ''), then the command.
 */
const SCRIPT = `planes=$1; cp_pid=$2; cp_start=$3; limit=$4; net=$5; shift 5
endnet() { if [ -n "$net" ] && n=$(cat "$net" 2>/dev/null); then case $(cat "/proc/$n/comm" 2>/dev/null) in pas*) kill "$n" ;; esac; fi; }
started() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }
alive() { [ -n "$1" ] && [ -n "$2" ] && [ "$(started "$1")" = "$2" ]; }
watch() {
  trap '' TERM INT
  gone=0
  while sleep 1; do
    if alive "$cp_pid" "$cp_start"; then gone=0; continue; fi
    for f in "$planes"/*; do
      p=\${f##*/}; t=$(cat "$f" 2>/dev/null)
      if alive "$p" "$t"; then cp_pid=$p; cp_start=$t; break; fi
    done
    if alive "$cp_pid" "$cp_start"; then gone=0; continue; fi
    gone=$((gone + 1))
    if [ "$gone" -ge "$limit" ]; then
      echo "hangar: no control plane has run for $limit s: ending this worker" >&2
      endnet
      kill -KILL 0
    fi
  done
}
w=
if [ "$limit" -gt 0 ]; then watch 3>&- 4>&- 5<&- & w=$!; fi
"$@"
status=$?
if [ -n "$w" ]; then kill -KILL "$w" 2>/dev/null; fi
endnet
if [ "$status" -gt 128 ] && [ "$status" -lt 160 ]; then kill -$((status - 128)) $$; fi
exit $status
`

/** The argv (for /bin/sh) of `command` under the supervisor. */
export function supervisedArgv(o: {
  controlPlanes: string
  controlPlanePid: number
  controlPlaneStart: string
  orphanLimitS: number
  networkPidFile?: string
  command: string[]
}): string[] {
  return [
    '-c',
    SCRIPT,
    SUPERVISOR_NAME,
    o.controlPlanes,
    String(o.controlPlanePid),
    o.controlPlaneStart,
    String(o.orphanLimitS),
    o.networkPidFile ?? '',
    ...o.command,
  ]
}

/**
 * Signals a workload led by `pid`. SIGKILL goes to the whole group (the sandbox's processes included). Other
 * signals of a supervised workload go to its program's processes only: not to the supervisor, which must stay
 * to report how the program ends, and not to bwrap, whose death would kill the sandbox without a grace period.
 */
export function signalWorkload(pid: number, signal: NodeJS.Signals): void {
  if (signal === 'SIGKILL' || !commandLine(pid).includes(SUPERVISOR_NAME)) return signalGroup(pid, signal)
  for (const p of groupMembers(pid)) {
    // pasta (as a user, it runs the sandbox) must outlive the program too: its network goes with it.
    if (p.pid === pid || p.comm === 'bwrap' || /^pas/.test(p.comm)) continue
    try {
      process.kill(p.pid, signal)
    } catch {
      // ended meanwhile
    }
  }
}
