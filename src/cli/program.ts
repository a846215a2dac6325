import { readFileSync } from 'node:fs'
import { Command } from 'commander'
import { registerAccounts } from './commands/accounts.js'
import { registerQuotas } from './commands/quotas.js'
import { registerBilling } from './commands/billing.js'
import { registerCatalog } from './commands/catalog.js'
import { registerEndpoints } from './commands/endpoints.js'
import { registerEngine } from './commands/engine.js'
import { registerJobs } from './commands/jobs.js'
import { registerKeys } from './commands/keys.js'
import { registerImport } from './commands/import.js'
import { registerMigrate } from './commands/migrate.js'
import { registerPods } from './commands/pods.js'
import { registerClusters } from './commands/clusters.js'
import { registerRegistries } from './commands/registries.js'
import { registerSecrets } from './commands/secrets.js'
import { registerAudit } from './commands/audit.js'
import { registerMembers } from './commands/members.js'
import { registerServe } from './commands/serve.js'
import { registerSshKeys } from './commands/sshKeys.js'
import { registerTemplates } from './commands/templates.js'
import { registerVolumes } from './commands/volumes.js'

const EXIT_CODES = `
Exit codes: 0 ok, 1 unexpected error or 5xx, 2 bad command line, 3 server unreachable, 4 key refused (401/403),
5 not found (404), 6 request rejected (400/409/413/422), 7 rate limited (429), 8 job ended FAILED/CANCELLED/
TIMED_OUT, 9 job not ended when the wait ran out.`

/**
 * The `hangar` command tree. Every command group is registered here, one `register<Group>` per file in
 * `commands/`; a new group is one import and one line below.
 */
export function buildProgram(): Command {
  const program = new Command('hangar')
    .description(
      'Hangar: a self-hostable compute platform. `hangar serve` runs the server; the other commands talk to one.',
    )
    .version(version(), '-V, --version')
    .showHelpAfterError('(run with --help for usage)')
    .addHelpText('after', EXIT_CODES)
  for (const register of [
    registerServe,
    registerMigrate,
    registerImport,
    registerAccounts,
    registerKeys,
    registerEndpoints,
    registerJobs,
    registerPods,
    registerClusters,
    registerTemplates,
    registerVolumes,
    registerRegistries,
    registerSshKeys,
    registerBilling,
    registerQuotas,
    registerSecrets,
    registerAudit,
    registerMembers,
    registerCatalog,
    registerEngine,
  ]) {
    register(program)
  }
  // Commander errors (unknown option, missing argument) and help must not exit the process: main() turns
  // them into exit codes, so tests and embedders keep control.
  const configure = (cmd: Command) => {
    cmd.exitOverride()
    cmd.commands.forEach(configure)
  }
  configure(program)
  return program
}

/** The package version: package.json sits two levels above both src/cli and dist/cli. */
function version(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string })
      .version
  } catch {
    return 'unknown'
  }
}
