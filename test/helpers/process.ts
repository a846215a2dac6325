import { spawn, type ChildProcess } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const BIN = fileURLToPath(new URL('../../bin/hangar.js', import.meta.url))

export interface ServeProcess {
  child: ChildProcess
  url: string
  output: () => string
  /** Resolves with the exit code once the process ends. */
  exited: Promise<number | null>
}

/** Starts `hangar serve` (the built dist, or the `bin` given) as a child process on an ephemeral port. */
export async function spawnServe(dataDir: string, env: Record<string, string> = {}, bin = BIN): Promise<ServeProcess> {
  const child = spawn(process.execPath, [bin, 'serve', '--port', '0', '--data-dir', dataDir], {
    env: { ...process.env, HANGAR_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout!.on('data', (d) => (out += d))
  child.stderr!.on('data', (d) => (out += d))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  const url = await new Promise<string>((resolve, reject) => {
    const check = () => {
      const m = /listening on (http:\/\/\S+)/.exec(out)
      if (m) {
        child.stdout!.off('data', check)
        resolve(m[1])
      }
    }
    child.stdout!.on('data', check)
    void exited.then((code) => reject(new Error(`hangar serve exited with ${code} before listening:\n${out}`)))
  })
  return { child, url, output: () => out, exited }
}

/** `hangar serve` with a config file (its port included), as its own process that tests may SIGKILL; resolves once it listens. */
export function serveWithConfig(dataDir: string, configFile: string): Promise<{ proc: ChildProcess; url: string }> {
  const proc = spawn(process.execPath, [BIN, 'serve', '--data-dir', dataDir, '--config', configFile], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  return new Promise((resolve, reject) => {
    let out = ''
    proc.stdout!.on('data', (c) => {
      out += c
      const m = /listening on (\S+)/.exec(out)
      if (m) resolve({ proc, url: m[1] })
    })
    proc.stderr!.on('data', (c) => (out += c))
    proc.once('exit', (code) => reject(new Error(`hangar exited (${code}) before listening:\n${out}`)))
  })
}

/** Each live process with its process group and environment (those this user may read). */
export function processEnvironments(): { pid: number; pgrp: number; env: Map<string, string> }[] {
  const found: { pid: number; pgrp: number; env: Map<string, string> }[] = []
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8')
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      if (state === 'Z') continue
      const env = new Map(
        readFileSync(`/proc/${d}/environ`, 'utf8')
          .split('\0')
          .filter((e) => e.includes('='))
          .map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)] as [string, string]),
      )
      found.push({ pid: Number(d), pgrp: Number(pgrp), env })
    } catch {
      // gone meanwhile, or not ours
    }
  }
  return found
}

/**
 * The environment of a workload's program: the process of group `groupLeader` (a supervisor's pid) whose
 * environment names `variable`. The supervisor itself runs with Hangar's fixed environment, never the workload's
 * (issue 34): the variables are only in the program, inside its sandbox.
 */
export function programEnvironment(groupLeader: number, variable: string): Map<string, string> | null {
  return processEnvironments().find((p) => p.pgrp === groupLeader && p.env.has(variable))?.env ?? null
}
