import { readFileSync } from 'node:fs'
import type { Command } from 'commander'
import type { Registry } from '../../contract/registry.js'
import { clientCommand, clientFor, type ClientOptions } from '../clientCommand.js'
import { UsageError } from '../exitCodes.js'
import { print, type Column } from '../output.js'

const columns: Column<Registry>[] = [
  { header: 'id', value: (r) => r.id },
  { header: 'name', value: (r) => r.name },
]

/** `hangar registries`: container registry credentials (write-only secrets). */
export function registerRegistries(program: Command): void {
  const group = program
    .command('registries')
    .description('container registry credentials (username and password are never shown again)')
  clientCommand(group, 'list', 'list your registry credentials (names only)').action(async (opts: ClientOptions) => {
    const list = await clientFor(opts).listRegistries()
    print(opts, list, { rows: list, columns })
  })
  clientCommand(group, 'get <id>', 'show a registry credential (name only)').action(
    async (id: string, opts: ClientOptions) => {
      print(opts, await clientFor(opts).getRegistry(id))
    },
  )
  clientCommand(group, 'create', 'store a registry credential, encrypted at rest')
    .requiredOption('--name <name>', 'a name to refer to it by')
    .requiredOption('--username <username>', 'registry user')
    .option(
      '--password <password>',
      'registry password or token (visible in the process list: prefer --password-stdin)',
    )
    .option('--password-stdin', 'read the password from stdin')
    .action(
      async (opts: ClientOptions & { name: string; username: string; password?: string; passwordStdin?: boolean }) => {
        const password = opts.passwordStdin ? readFileSync(0, 'utf8').replace(/\r?\n$/, '') : opts.password
        if (!password) throw new UsageError('registries create: give --password or --password-stdin')
        print(opts, await clientFor(opts).createRegistry({ name: opts.name, username: opts.username, password }))
      },
    )
  clientCommand(group, 'delete <id>', 'delete a registry credential').action(
    async (id: string, opts: ClientOptions) => {
      await clientFor(opts).deleteRegistry(id)
      print(opts, { deleted: id }, () => `deleted ${id}`)
    },
  )
}
