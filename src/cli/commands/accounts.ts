import type { Command } from 'commander'
import type { Account } from '../../contract/admin.js'
import { clientCommand, clientFor, type ClientOptions } from '../clientCommand.js'
import { print, type Column } from '../output.js'

const columns: Column<Account>[] = [
  { header: 'id', value: (a) => a.id },
  { header: 'name', value: (a) => a.name },
  { header: 'rate limit exempt', value: (a) => a.rateLimitExempt },
  { header: 'created', value: (a) => a.createdAt },
]

/** `hangar accounts`: accounts (admin key). */
export function registerAccounts(program: Command): void {
  const group = program.command('accounts').description('accounts (admin key required)')
  clientCommand(group, 'create <name>', 'create an account')
    .option('--rate-limit-exempt', 'exempt its keys from the management rate limits')
    .action(async (name: string, opts: ClientOptions & { rateLimitExempt?: boolean }) => {
      const account = await clientFor(opts).createAccount({ name, rateLimitExempt: opts.rateLimitExempt ?? false })
      print(opts, account)
    })
  clientCommand(group, 'list', 'list accounts').action(async (opts: ClientOptions) => {
    const accounts = await clientFor(opts).listAccounts()
    print(opts, accounts, { rows: accounts, columns })
  })
}
