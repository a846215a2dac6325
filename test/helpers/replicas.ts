import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const BIN = fileURLToPath(new URL('../../bin/hangar.js', import.meta.url))

/** `hangar serve` as its own process, its whole output kept (leadership is read from its log). */
export interface Replica {
  name: string
  proc: ChildProcess
  url: string
  out: () => string
}

/** Starts `hangar serve` (the built dist/) on `dataDir` with `configFile`; resolves once it listens. */
export function startReplica(name: string, dataDir: string, configFile: string): Promise<Replica> {
  const proc = spawn(process.execPath, [BIN, 'serve', '--data-dir', dataDir, '--config', configFile], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, HANGAR_LOG_FORMAT: 'json' },
  })
  let out = ''
  proc.stdout!.on('data', (c) => (out += c))
  proc.stderr!.on('data', (c) => (out += c))
  return new Promise((resolve, reject) => {
    const check = () => {
      const m = /listening on (http:\/\/[^\s"]+)/.exec(out)
      if (m) resolve({ name, proc, url: m[1], out: () => out })
    }
    proc.stdout!.on('data', check)
    proc.once('exit', (code) => reject(new Error(`${name} exited (${code}) before listening:\n${out}`)))
  })
}

/** Whether the replica has become the leader (it says so in its log). */
export const leads = (r: Replica): boolean => r.out().includes('became the leader')
