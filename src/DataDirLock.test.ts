import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { DataDirLock, DataDirLockedError } from './DataDirLock.js'
import { processStartMarker } from './runtime/process/procfs.js'

const linux = processStartMarker(process.pid) !== null
if (!linux) console.log('DataDirLock: /proc is not readable here; the start-marker cases are skipped')

describe('DataDirLock owners, told apart by pid and start marker', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hangar-lock-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  const lockWith = (name: string, procStart: string | null) => {
    const d = join(dir, name)
    rmSync(d, { recursive: true, force: true })
    mkdirSync(d)
    writeFileSync(
      join(d, 'hangar.lock'),
      JSON.stringify({ pid: process.pid, host: hostname(), startedAt: '2026-01-01T00:00:00.000Z', procStart }),
    )
    return d
  }

  it.skipIf(!linux)('refuses a live owner: its marker, or an older lock holding its start time alone', () => {
    const marker = processStartMarker(process.pid)!
    expect(() => DataDirLock.acquire(lockWith('live', marker))).toThrow(DataDirLockedError)
    expect(() => DataDirLock.acquire(lockWith('old-format', marker.split(':')[1]))).toThrow(DataDirLockedError)
  })

  it.skipIf(!linux)('takes over a lock whose pid now runs another process (a different start)', () => {
    const d = lockWith('reused', 'another-boot:1')
    const lock = DataDirLock.acquire(d)
    expect(JSON.parse(readFileSync(join(d, 'hangar.lock'), 'utf8')).procStart).toBe(processStartMarker(process.pid))
    lock.release()
  })
})
