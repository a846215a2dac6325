import type { Command } from 'commander'
import { loadConfig } from '../../config.js'
import { CliError, ExitCode, UsageError } from '../exitCodes.js'

interface ImportOptions {
  fromSqlite: string
  force?: boolean
  config?: string
}

/** The files of a data dir that the database does not hold, and why each one matters after the move. */
const DATA_DIR_FILES = `Not copied, and needed by every replica: keep serving from this data dir, or copy it to each replica's --data-dir:
  secret.key       registry passwords are sealed with it: without it, pulls from private registries fail
  admin-key        the admin key as first printed (the database holds only its hash)
  installation-id  labels this installation's workloads: a new one would not recognise the running containers
  volumes/         the files of network volumes and pods' volumes`

/** `hangar import --from-sqlite <dir>`: moves an embedded SQLite install into the configured PostgreSQL. */
export function registerImport(program: Command): void {
  program
    .command('import')
    .description(
      'copy every table of a stopped embedded SQLite install into the PostgreSQL store of HANGAR_DATABASE_URL, in one transaction, after migrating it; refuses a target that holds data unless --force',
    )
    .requiredOption(
      '--from-sqlite <path>',
      'data dir of the SQLite install (or its hangar.db); its server must be stopped',
    )
    .option('--force', 'delete what the target schema holds first (in the same transaction) instead of refusing')
    .option('--config <file>', 'JSON config file (env HANGAR_CONFIG); env overrides it')
    .action(async (opts: ImportOptions) => {
      const config = loadConfig({ configFile: opts.config })
      if (!config.databaseUrl)
        throw new UsageError(
          'no target: set HANGAR_DATABASE_URL (or databaseUrl in --config) to the PostgreSQL to import into',
        )
      // Loaded here so that client commands do not load the database drivers.
      const { importFromSqlite, describeTarget, ImportSourceError, ImportTargetNotEmptyError } = await import(
        '../../store/importFromSqlite.js'
      )
      const target = describeTarget(config.databaseUrl, config.databaseSchema)
      try {
        const report = await importFromSqlite({
          from: opts.fromSqlite,
          url: config.databaseUrl,
          schema: config.databaseSchema,
          force: opts.force,
        })
        const width = Math.max(...report.tables.map((t) => t.table.length))
        const lines = [`imported ${report.source} into postgres ${target}`]
        if (report.migrated.length > 0) lines.push(`  migrated the target first: ${report.migrated.join(', ')}`)
        if (report.deleted.length > 0)
          lines.push(`  deleted first (--force): ${report.deleted.map((d) => `${d.table} ${d.rows}`).join(', ')}`)
        for (const t of report.tables) lines.push(`  ${t.table.padEnd(width)}  ${String(t.rows).padStart(8)}`)
        lines.push(
          `  ${'total'.padEnd(width)}  ${String(report.tables.reduce((n, t) => n + t.rows, 0)).padStart(8)} rows`,
        )
        lines.push('', DATA_DIR_FILES)
        console.log(lines.join('\n'))
      } catch (err) {
        if (err instanceof ImportTargetNotEmptyError) throw new CliError(err.message, ExitCode.REJECTED)
        if (err instanceof ImportSourceError) throw new UsageError(err.message)
        throw err
      }
    })
}
