import type { Command } from 'commander'
import type { AuditEntry, AuditQuery } from '../../contract/audit.js'
import { clientCommand, clientFor, type ClientOptions } from '../clientCommand.js'
import { print, renderTable, type Column } from '../output.js'

const columns: Column<AuditEntry>[] = [
  { header: 'at', value: (e) => e.at },
  { header: 'action', value: (e) => e.action },
  { header: 'resource', value: (e) => e.resourceId },
  { header: 'outcome', value: (e) => (e.outcome === 'success' ? 'success' : `${e.outcome} ${e.status}`) },
  { header: 'actor', value: (e) => `${e.actor.type} ${e.actor.id}` },
  { header: 'ip', value: (e) => e.ip },
]

type FilterOptions = ClientOptions & {
  actor?: string
  action?: string
  resourceType?: string
  resource?: string
  account?: string
  since?: string
  until?: string
}

/** The filter options both audit commands take. */
function withFilters(cmd: Command): Command {
  return cmd
    .option('--actor <id>', "entries of one key's (member's) id")
    .option('--action <action>', 'one action (pod.create), or a prefix ending in . (pod.)')
    .option('--resource-type <type>', 'entries about one kind of resource (endpoint, pod, secret, key, ...)')
    .option('--resource <id>', 'entries about one resource')
    .option('--account <account>', "admin only: one account's entries (id or name)")
    .option('--since <time>', 'entries at or after this time (ISO 8601)')
    .option('--until <time>', 'entries before this time (ISO 8601)')
}

function queryOf(opts: FilterOptions): AuditQuery {
  return {
    actor: opts.actor,
    action: opts.action,
    resourceType: opts.resourceType,
    resourceId: opts.resource,
    account: opts.account,
    since: opts.since,
    until: opts.until,
  }
}

/** `hangar audit`: the audit log of changes made through the API. */
export function registerAudit(program: Command): void {
  const group = program
    .command('audit')
    .description(
      "the audit log: who changed what, when, from where, and the outcome (your account's; all for the admin)",
    )
  withFilters(clientCommand(group, 'list', 'show a page of entries, newest first'))
    .option('--limit <n>', 'entries per page (1-1000)', '50')
    .option('--cursor <cursor>', 'continue after a page (its nextCursor)')
    .action(async (opts: FilterOptions & { limit: string; cursor?: string }) => {
      const page = await clientFor(opts).auditPage({ ...queryOf(opts), limit: Number(opts.limit), cursor: opts.cursor })
      print(opts, page, () => {
        const table = renderTable(page.entries, columns)
        return page.nextCursor ? `${table}\n(older entries: --cursor ${page.nextCursor})` : table
      })
    })
  withFilters(clientCommand(group, 'export', 'write every matching entry to stdout as JSON lines')).action(
    async (opts: FilterOptions) => {
      await clientFor(opts).exportAudit(queryOf(opts), (chunk) => process.stdout.write(chunk))
    },
  )
}
