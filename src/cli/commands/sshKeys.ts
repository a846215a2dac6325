import { readFileSync } from 'node:fs'
import type { Command } from 'commander'
import { clientCommand, clientFor, type ClientOptions } from '../clientCommand.js'
import { CliError, ExitCode, UsageError } from '../exitCodes.js'
import { print } from '../output.js'

/** A key given inline, or read from a file (`@~/.ssh/id_ed25519.pub`, or any existing path). */
function keyArg(v: string): string {
  const path = v.startsWith('@') ? v.slice(1) : null
  if (path === null) return v.trim()
  try {
    return readFileSync(path, 'utf8').trim()
  } catch (err) {
    throw new UsageError(`cannot read ${path}: ${(err as Error).message}`)
  }
}

/** `hangar ssh-keys`: the account's SSH public keys (for pods). */
export function registerSshKeys(program: Command): void {
  const group = program.command('ssh-keys').description("your account's SSH public keys")
  const show = (opts: ClientOptions, keys: string[]) =>
    print(opts, { keys }, () => (keys.length ? keys.join('\n') : '(none)'))
  clientCommand(group, 'list', 'list your SSH public keys').action(async (opts: ClientOptions) => {
    show(opts, (await clientFor(opts).sshKeys()).keys)
  })
  clientCommand(
    group,
    'add <key>',
    'add a public key: the key line, or @FILE (e.g. @$HOME/.ssh/id_ed25519.pub)',
  ).action(async (key: string, opts: ClientOptions) => {
    const api = clientFor(opts)
    const { keys } = await api.sshKeys()
    show(opts, (await api.putSshKeys([...keys, keyArg(key)])).keys)
  })
  clientCommand(
    group,
    'remove <key>',
    'remove keys equal to the key line, or whose comment (e.g. me@laptop) matches',
  ).action(async (key: string, opts: ClientOptions) => {
    const api = clientFor(opts)
    const { keys } = await api.sshKeys()
    const want = keyArg(key)
    const kept = keys.filter((k) => k !== want && k.split(/\s+/).slice(2).join(' ') !== want)
    if (kept.length === keys.length)
      throw new CliError(`no SSH key matches ${JSON.stringify(want)}`, ExitCode.NOT_FOUND)
    show(opts, (await api.putSshKeys(kept)).keys)
  })
}
