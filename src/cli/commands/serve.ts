import type { Command } from 'commander'
import { loadConfig } from '../../config.js'
import { intOption } from '../clientCommand.js'
import { CliError, ExitCode } from '../exitCodes.js'

interface ServeOptions {
  host?: string
  port?: number
  dataDir?: string
  config?: string
}

/** `hangar serve`: runs the server in the foreground until SIGINT/SIGTERM. */
export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('run the Hangar server in the foreground (stops on Ctrl-C / SIGTERM, finishing requests in flight)')
    .option('--host <host>', 'address to listen on (env HANGAR_HOST; default 127.0.0.1)')
    .option('--port <port>', 'port to listen on, 0 for any free one (env HANGAR_PORT; default 8080)', intOption)
    .option('--data-dir <dir>', 'where the database, keys and volumes live (env HANGAR_DATA_DIR; default ./.hangar)')
    .option('--config <file>', 'JSON config file (env HANGAR_CONFIG); env and flags override it')
    .action(async (opts: ServeOptions) => {
      const config = loadConfig({ host: opts.host, port: opts.port, dataDir: opts.dataDir, configFile: opts.config })
      // Loaded here so that client commands do not pay for loading the whole server.
      const { startHangar } = await import('../../main.js')
      let hangar: Awaited<ReturnType<typeof startHangar>>
      try {
        hangar = await startHangar(config)
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
          throw new CliError(
            `cannot listen on ${config.host}:${config.port}: the address is in use (another Hangar, or another program); choose another port with --port or HANGAR_PORT`,
            ExitCode.ERROR,
          )
        }
        throw err
      }
      const lines = [
        `Hangar is listening on ${hangar.url}`,
        `  console:     ${hangar.url}/console/  (sign in with the admin key below)`,
        `  API docs:    ${hangar.url}/docs  (schema: ${hangar.url}/v2/openapi.json)`,
        `  data dir:    ${config.dataDir}`,
      ]
      if (hangar.adminKey && hangar.adminKeyFile)
        lines.push(`  admin key:   ${hangar.adminKey}  (shown once; saved to ${hangar.adminKeyFile}, mode 0600)`)
      else if (hangar.adminKeyFile) lines.push(`  admin key:   in ${hangar.adminKeyFile}`)
      else lines.push('  admin key:   the one set with HANGAR_ADMIN_API_KEY')
      const { hostEngines } = await import('../../runtime/buildRuntime.js')
      for (const [hostId, e] of hostEngines(config))
        lines.push(
          `  engine:      ${e.address} for host ${hostId}, network ${e.network}  (\`hangar engine check\` tests it)`,
        )
      console.log(lines.join('\n'))

      await new Promise<void>((resolve) => {
        const onSignal = (signal: string) => {
          console.log(`${signal}: stopping (finishing requests in flight)`)
          process.off('SIGINT', onSignal)
          process.off('SIGTERM', onSignal)
          resolve()
        }
        process.on('SIGINT', onSignal)
        process.on('SIGTERM', onSignal)
      })
      await hangar.stop()
      console.log('stopped')
    })
}
