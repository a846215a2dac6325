import { readFileSync } from 'node:fs'
import type { Command } from 'commander'
import type { Secret } from '../../contract/secret.js'
import { clientCommand, clientFor, type ClientOptions } from '../clientCommand.js'
import { UsageError } from '../exitCodes.js'
import { print, type Column } from '../output.js'

const columns: Column<Secret>[] = [
  { header: 'name', value: (s) => s.name },
  { header: 'version', value: (s) => s.version },
  { header: 'updated', value: (s) => s.updatedAt },
  { header: 'id', value: (s) => s.id },
  { header: 'description', value: (s) => s.description },
]

type ValueOptions = ClientOptions & { value?: string; valueStdin?: boolean; description?: string }

/** The value from --value-stdin (one trailing newline dropped) or --value; undefined when neither is given. */
function secretValue(opts: ValueOptions): string | undefined {
  if (opts.valueStdin) return readFileSync(0, 'utf8').replace(/\r?\n$/, '')
  return opts.value
}

/** `hangar secrets`: the account's secrets, referenced from env as {{ RUNPOD_SECRET_<name> }}. */
export function registerSecrets(program: Command): void {
  const group = program
    .command('secrets')
    .description(
      'secrets of your account: env values reference them as {{ RUNPOD_SECRET_<name> }}; values are never shown',
    )
  clientCommand(group, 'list', 'list your secrets (never their values)').action(async (opts: ClientOptions) => {
    const list = await clientFor(opts).listSecrets()
    print(opts, list, { rows: list, columns })
  })
  clientCommand(group, 'get <name>', "show a secret's metadata (by name or id)").action(
    async (ref: string, opts: ClientOptions) => print(opts, await clientFor(opts).getSecret(ref)),
  )
  clientCommand(group, 'create <name>', 'create a secret, sealed at rest')
    .option('--value <value>', 'the value (visible in the process list: prefer --value-stdin)')
    .option('--value-stdin', 'read the value from stdin')
    .option('--description <text>', 'what it is for')
    .action(async (name: string, opts: ValueOptions) => {
      const value = secretValue(opts)
      if (!value) throw new UsageError('secrets create: give --value or --value-stdin')
      print(opts, await clientFor(opts).createSecret({ name, value, description: opts.description }))
    })
  clientCommand(group, 'update <name>', 'rotate a secret (used from the next start of each workload) or describe it')
    .option('--value <value>', 'the new value (visible in the process list: prefer --value-stdin)')
    .option('--value-stdin', 'read the new value from stdin')
    .option('--description <text>', 'a new description')
    .action(async (ref: string, opts: ValueOptions) => {
      const value = secretValue(opts)
      if (value === undefined && opts.description === undefined)
        throw new UsageError('secrets update: give --value, --value-stdin or --description')
      print(opts, await clientFor(opts).updateSecret(ref, { value, description: opts.description }))
    })
  clientCommand(group, 'delete <name>', 'delete a secret (workloads referencing it fail their next start)').action(
    async (ref: string, opts: ClientOptions) => {
      await clientFor(opts).deleteSecret(ref)
      print(opts, { deleted: ref }, () => `deleted ${ref}`)
    },
  )
}
