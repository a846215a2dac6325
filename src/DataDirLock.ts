import { readFileSync, unlinkSync, writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { processStartMarker } from './runtime/process/procfs.js'

/** What the lock file holds: enough to tell whether its owner still runs, and to tell a person who it is. */
interface Owner {
  pid: number
  host: string
  startedAt: string
  /** The process's boot id and start time (/proc, `processStartMarker`), so a reused pid is not taken for the owner. */
  procStart: string | null
}

/** Thrown when another running Hangar holds the data dir. */
export class DataDirLockedError extends Error {}

/**
 * Exclusive use of a data dir by one running Hangar: `<dataDir>/hangar.lock`, created with O_EXCL and holding
 * the owner's pid. Two servers on one dir would both run autoscalers over one database and stop each other's
 * workers. A lock left by a process that died (SIGKILL, power loss) is taken over: its pid no longer runs, or
 * runs a different process.
 */
export class DataDirLock {
  private constructor(private readonly path: string) {}

  /** Takes the lock or throws a DataDirLockedError naming the process that holds it. */
  static acquire(dataDir: string): DataDirLock {
    const path = join(dataDir, 'hangar.lock')
    const me: Owner = {
      pid: process.pid,
      host: hostname(),
      startedAt: new Date().toISOString(),
      procStart: processStartMarker(process.pid),
    }
    for (let attempt = 0; ; attempt++) {
      try {
        writeFileSync(path, JSON.stringify(me) + '\n', { flag: 'wx', mode: 0o600 })
        return new DataDirLock(path)
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt >= 3) throw err
      }
      const owner = readOwner(path)
      if (owner && owner.host !== me.host) {
        throw new DataDirLockedError(
          `data dir ${dataDir} is locked by a Hangar on host ${owner.host} (pid ${owner.pid}, started ${owner.startedAt}); if that server is gone, delete ${path}`,
        )
      }
      if (owner && alive(owner)) {
        throw new DataDirLockedError(
          `data dir ${dataDir} is in use by another Hangar (pid ${owner.pid}, started ${owner.startedAt}): stop it first, or start this one with another --data-dir`,
        )
      }
      // Stale (its owner is gone) or unreadable (the owner died while writing it): take it over.
      try {
        unlinkSync(path)
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
      }
    }
  }

  /** Gives the data dir up; called last when the server stops. */
  release(): void {
    try {
      unlinkSync(this.path)
    } catch {
      // already gone: nothing to release
    }
  }
}

function readOwner(path: string): Owner | null {
  try {
    const o = JSON.parse(readFileSync(path, 'utf8')) as Partial<Owner>
    return typeof o.pid === 'number' && typeof o.host === 'string'
      ? { pid: o.pid, host: o.host, startedAt: String(o.startedAt), procStart: o.procStart ?? null }
      : null
  } catch {
    // Missing, or unreadable (its owner died while writing it): no holder, and the caller takes the lock over.
    return null
  }
}

function alive(owner: Owner): boolean {
  try {
    process.kill(owner.pid, 0)
  } catch (err) {
    // EPERM: it exists but belongs to another user.
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false
  }
  // An owner without a marker ran where /proc cannot be read: its pid is all there is to go by.
  if (owner.procStart === null) return true
  // Null now: it became a zombie (or ended) since. A lock of an older Hangar holds the start time alone.
  const now = processStartMarker(owner.pid)
  return now !== null && (now === owner.procStart || now.endsWith(`:${owner.procStart}`))
}
