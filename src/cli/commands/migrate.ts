import type { Command } from 'commander'
import { loadConfig } from '../../config.js'

interface MigrateOptions {
  dataDir?: string
  config?: string
}

/** `hangar migrate`: brings the configured store's schema up to date (`hangar serve` also does at start). */
export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description(
      'apply pending database migrations to the configured store (PostgreSQL with HANGAR_DATABASE_URL, else the SQLite file in the data dir) and print them',
    )
    .option('--data-dir <dir>', 'data dir of the SQLite store (env HANGAR_DATA_DIR; default ./.hangar)')
    .option('--config <file>', 'JSON config file (env HANGAR_CONFIG); env and flags override it')
    .action(async (opts: MigrateOptions) => {
      const config = loadConfig({ dataDir: opts.dataDir, configFile: opts.config })
      // Loaded here so that client commands do not load the database drivers.
      const { migrateStore } = await import('../../store/openStore.js')
      const report = await migrateStore(config, config.dataDir)
      const lines = [
        `${report.dialect} ${report.target}: ${report.applied.length === 0 ? 'up to date, nothing applied' : `applied ${report.applied.length} migration(s)`}`,
      ]
      for (const name of report.applied) lines.push(`  ${name}`)
      console.log(lines.join('\n'))
    })
}
