import { InvalidArgumentError, Option, type Command } from 'commander'
import type { ApiKey, Permission } from '../../contract/admin.js'
import { clientCommand, clientFor, collect, type ClientOptions } from '../clientCommand.js'
import { print, type Column } from '../output.js'

const columns: Column<ApiKey>[] = [
  { header: 'id', value: (k) => k.id },
  { header: 'account', value: (k) => k.accountName },
  { header: 'name', value: (k) => k.name },
  { header: 'permission', value: (k) => k.permission + (k.admin ? ' (admin)' : '') },
  { header: 'endpoints', value: (k) => k.endpointIds.join(',') },
  { header: 'prefix', value: (k) => k.prefix },
  { header: 'expires', value: (k) => k.expiresAt },
  { header: 'revoked', value: (k) => k.revokedAt },
  { header: 'last used', value: (k) => k.lastUsedAt },
]

interface CreateOptions extends ClientOptions {
  account: string
  permission: Permission
  endpoint?: string[]
  expires?: string
  name?: string
}

function date(v: string): string {
  const t = Date.parse(v)
  if (Number.isNaN(t)) throw new InvalidArgumentError('not a date (e.g. 2027-01-31 or 2027-01-31T12:00:00Z).')
  return new Date(t).toISOString()
}

/** `hangar keys`: API keys (admin key). */
export function registerKeys(program: Command): void {
  const group = program.command('keys').description('API keys (admin key required)')
  clientCommand(group, 'create', 'create an API key; the key is printed only now')
    .requiredOption('--account <account>', 'account id or name')
    .addOption(
      new Option('--permission <permission>', 'what the key may do')
        .choices(['ALL', 'READ_ONLY', 'RESTRICTED'])
        .makeOptionMandatory(),
    )
    .option('--endpoint <id>', 'RESTRICTED: an endpoint the key may use (repeatable)', collect)
    .option('--expires <date>', 'expiry date or time', date)
    .option('--name <name>', 'a label for the key')
    .action(async (opts: CreateOptions) => {
      const key = await clientFor(opts).createKey({
        account: opts.account,
        permission: opts.permission,
        endpointIds: opts.endpoint,
        expiresAt: opts.expires,
        name: opts.name,
      })
      print(opts, key)
      console.error('The key above is shown only now; store it safely.')
    })
  clientCommand(group, 'list', 'list API keys (never the keys themselves)')
    .option('--account <account>', 'only this account (id or name)')
    .action(async (opts: ClientOptions & { account?: string }) => {
      const keys = await clientFor(opts).listKeys(opts.account)
      print(opts, keys, { rows: keys, columns })
    })
  clientCommand(group, 'revoke <id>', 'revoke an API key at once').action(async (id: string, opts: ClientOptions) => {
    print(opts, await clientFor(opts).revokeKey(id))
  })
}
