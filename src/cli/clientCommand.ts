import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { InvalidArgumentError, type Command } from 'commander'
import { loadClientConfig } from '../config.js'
import { UsageError } from './exitCodes.js'
import { HangarClient } from './HangarClient.js'
import type { OutputOptions } from './output.js'

/** Options of every command that talks to a server. */
export interface ClientOptions extends OutputOptions {
  url?: string
  apiKey?: string
  dataDir?: string
}

/**
 * A subcommand of `parent` that talks to a running server: it gets --url, --api-key, --data-dir and --json,
 * so each command's --help lists everything it accepts.
 */
export function clientCommand(parent: Command, nameAndArgs: string, description: string): Command {
  return parent
    .command(nameAndArgs)
    .description(description)
    .option('--json', 'print the API response as JSON (for scripts) instead of a table')
    .option('--url <url>', 'the server (env HANGAR_URL; default http://127.0.0.1:8080)')
    .option('--api-key <key>', 'API key (env HANGAR_API_KEY; default: the admin key in <data-dir>/admin-key)')
    .option('--data-dir <dir>', "the server's data dir, to read its admin key (env HANGAR_DATA_DIR; default ./.hangar)")
}

/** The client for a command's options: the key from the flag, the environment, or the data dir's admin-key file. */
export function clientFor(opts: ClientOptions): HangarClient {
  const cc = loadClientConfig({ url: opts.url, apiKey: opts.apiKey, dataDir: opts.dataDir })
  let apiKey = cc.apiKey
  if (!apiKey) {
    try {
      apiKey = readFileSync(join(cc.dataDir, 'admin-key'), 'utf8').trim()
    } catch {
      throw new UsageError(
        `no API key: pass --api-key, set HANGAR_API_KEY, or run next to the data dir holding admin-key (${cc.dataDir})`,
      )
    }
  }
  return new HangarClient(cc.url, apiKey)
}

/** Reads a JSON argument given inline, as `@file`, or as `-` for stdin; `what` names it in errors. */
export function readJson(value: string, what: string): unknown {
  let text = value
  try {
    if (value === '-') text = readFileSync(0, 'utf8')
    else if (value.startsWith('@')) text = readFileSync(value.slice(1), 'utf8')
  } catch (err) {
    throw new UsageError(`${what}: cannot read ${value.slice(1) || 'stdin'}: ${(err as Error).message}`)
  }
  try {
    return JSON.parse(text)
  } catch (err) {
    throw new UsageError(`${what}: not valid JSON: ${(err as Error).message}`)
  }
}

/** Reads a JSON object argument (see readJson). */
export function readJsonObject(value: string, what: string): Record<string, unknown> {
  const v = readJson(value, what)
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new UsageError(`${what}: expected a JSON object`)
  return v as Record<string, unknown>
}

/** Parses an integer option value (commander's argParser). */
export function intOption(v: string): number {
  const n = Number(v)
  if (v.trim() === '' || !Number.isInteger(n)) throw new InvalidArgumentError('expected an integer.')
  return n
}

/** Collects a repeatable option into an array (commander's argParser). */
export function collect(v: string, prev: string[] | undefined): string[] {
  return [...(prev ?? []), v]
}

/** Collects repeatable KEY=VALUE options into an object (commander's argParser). */
export function collectEnv(v: string, prev: Record<string, string> | undefined): Record<string, string> {
  const at = v.indexOf('=')
  if (at <= 0) throw new InvalidArgumentError('expected KEY=VALUE.')
  return { ...prev, [v.slice(0, at)]: v.slice(at + 1) }
}
