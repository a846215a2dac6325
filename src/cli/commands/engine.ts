import type { Command } from 'commander'
import { loadConfig, publicBaseUrl } from '../../config.js'
import { hostEngines } from '../../runtime/buildRuntime.js'
import { checkEngine } from '../../runtime/docker/engineCheck.js'
import { engineClient } from '../../runtime/docker/engineClient.js'
import { ensureSampleImage } from '../../runtime/docker/sampleImages.js'
import { BUILTIN_WORKERS } from '../../runtime/images.js'
import { CliError, ExitCode } from '../exitCodes.js'

interface EngineOptions {
  config?: string
  port?: string
}

/** The engines `serve` would use with the same settings (config file, HANGAR_ENGINE, ...); exits 2 without any. */
function configuredEngines(opts: EngineOptions) {
  const config = loadConfig({ configFile: opts.config, port: opts.port === undefined ? undefined : Number(opts.port) })
  const engines = hostEngines(config)
  if (engines.size === 0) {
    throw new CliError(
      'no container engine is configured: set HANGAR_ENGINE=unix:///run/podman/podman.sock (or "engine" in the config file); see docs/containers.md',
      ExitCode.USAGE,
    )
  }
  const workerUrl = config.workerUrl ?? publicBaseUrl({ ...config, publicUrl: undefined }, config.port)
  return { engines, workerUrl }
}

/** `hangar engine check` and `hangar images build`: container engines as `serve` would use them. */
export function registerEngine(program: Command): void {
  const engine = program
    .command('engine')
    .description("container engines (Docker or Podman's API) as `hangar serve` would use them")
  engine
    .command('check')
    .description(
      'probe each configured engine: it answers, the sample image builds, a container starts with the configured network, and that container reaches the URL workers call (workerUrl); says what to fix',
    )
    .option('--config <file>', 'JSON config file (env HANGAR_CONFIG), as for serve')
    .option('--port <port>', 'the port serve listens on (env HANGAR_PORT; default 8080), for the default workerUrl')
    .action(async (opts: EngineOptions) => {
      const { engines, workerUrl } = configuredEngines(opts)
      let failed = false
      for (const [hostId, e] of engines) {
        const url = e.controlPlaneUrl ?? workerUrl
        console.log(`host ${hostId}: engine ${e.address}, network ${e.network}, workers call ${url}`)
        for (const s of await checkEngine(e, url)) {
          console.log(`  ${s.ok ? 'ok  ' : 'FAIL'} ${s.step.padEnd(9)} ${s.detail}`)
          if (s.fix) console.log(`       fix: ${s.fix}`)
          failed ||= !s.ok
        }
      }
      if (failed) throw new CliError('the engine check failed (see above)', ExitCode.ERROR)
    })

  program
    .command('images')
    .description('the sample worker images on container engines')
    .command('build')
    .description(
      `build the sample images (localhost/hangar/{${BUILTIN_WORKERS.join(',')}}:<version>) on each configured engine from this machine's node and the built worker SDK; no registry is used (they are also built on first use)`,
    )
    .option('--config <file>', 'JSON config file (env HANGAR_CONFIG), as for serve')
    .action(async (opts: EngineOptions) => {
      const { engines } = configuredEngines(opts)
      for (const [hostId, e] of engines) {
        const docker = engineClient(e)
        for (const name of BUILTIN_WORKERS) {
          const t0 = Date.now()
          let built = false
          const ref = await ensureSampleImage(docker, name, () => (built = true)).catch((err: Error) => {
            throw new CliError(`host ${hostId}: ${err.message}`, ExitCode.ERROR)
          })
          console.log(
            `host ${hostId}: ${ref} ${built ? `built (${((Date.now() - t0) / 1000).toFixed(1)} s)` : 'up to date'}`,
          )
        }
      }
    })
}
