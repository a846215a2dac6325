import { spawn } from 'node:child_process'
import { mkdirSync, readFileSync, rmSync } from 'node:fs'
import type { RuntimeDriver, WorkerExit, WorkerHandle, WorkerSpec } from '../RuntimeDriver.js'
import { lineSplitter, WorkerLog } from '../WorkerLog.js'

/**
 * Workers as local child processes, each the leader of its own process group so that stopping it also
 * stops what it started. Stop = SIGTERM to the group, SIGKILL after the grace period.
 */
export class ProcessDriver implements RuntimeDriver {
  readonly name = 'process'

  async start(spec: WorkerSpec): Promise<WorkerHandle> {
    if (spec.command.length === 0) throw new Error('no command to run: the endpoint sets no entrypoint or cmd and its image has no mapping')
    // The container disk is ephemeral: every start begins with an empty one.
    rmSync(spec.workDir, { recursive: true, force: true })
    mkdirSync(spec.workDir, { recursive: true })
    const logs = new WorkerLog(spec.logFile)
    logs.append('system', `starting: ${spec.command.map((a) => JSON.stringify(a)).join(' ')}`)
    const child = spawn(spec.command[0], spec.command.slice(1), { cwd: spec.workDir, env: spec.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
    try {
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve)
        child.once('error', reject)
      })
    } catch (err) {
      const message = `cannot start ${JSON.stringify(spec.command[0])}: ${(err as Error).message}`
      logs.append('system', message)
      logs.end()
      throw new Error(message)
    }
    const pid = child.pid!
    for (const stream of [child.stdout!, child.stderr!]) {
      const split = lineSplitter((line) => logs.append('container', line))
      stream.on('data', (chunk: Buffer) => split.push(chunk))
      stream.on('end', () => split.flush())
    }
    // 'close' comes after the output pipes are drained, so the last lines are in the log.
    const exited = new Promise<WorkerExit>((resolve) => {
      child.once('close', (code, signal) => {
        logs.append('system', `exited (${signal ? `signal ${signal}` : `code ${code}`})`)
        logs.end()
        resolve({ code, signal })
      })
    })
    let done = false
    void exited.then(() => (done = true))
    return {
      workerId: spec.workerId,
      pid,
      pidMarker: processStartMarker(pid),
      exited,
      logs,
      async stop(graceMs: number) {
        if (done) return
        signalGroup(pid, 'SIGTERM')
        const timer = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), graceMs).unref())
        if ((await Promise.race([exited, timer])) === 'timeout') signalGroup(pid, 'SIGKILL')
        await exited
      },
    }
  }

  async reap(ref: { pid: number | null; pidMarker: string | null }): Promise<boolean> {
    if (!ref.pid || !ref.pidMarker) return false
    // Only the very process we started (same start marker): pids are reused.
    if (processStartMarker(ref.pid) !== ref.pidMarker) return false
    signalGroup(ref.pid, 'SIGKILL')
    return true
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal)
  } catch {
    try {
      process.kill(pid, signal)
    } catch {
      // already gone
    }
  }
}

/**
 * `<boot id>:<start time>` of a process (Linux /proc), or null where that cannot be read. Together with the
 * pid it names one process across the machine's uptime.
 */
export function processStartMarker(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name may hold spaces and parentheses; fields after the last ')' are fixed.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const startTime = fields[19]
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()
    return startTime ? `${boot}:${startTime}` : null
  } catch {
    return null
  }
}
