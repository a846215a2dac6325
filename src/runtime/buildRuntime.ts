import type { Config } from '../config.js'
import { DockerDriver } from './docker/DockerDriver.js'
import { engineConfig, type EngineConfig } from './docker/EngineConfig.js'
import { HostRuntimes } from './HostRuntimes.js'
import { ProcessDriver, type ProcessDriverOptions } from './process/ProcessDriver.js'
import type { RuntimeDriver } from './RuntimeDriver.js'

/** The engine settings of each host that has one: configured hosts name theirs, `engine` is this machine's. */
export function hostEngines(config: Pick<Config, 'fleet' | 'engine'>): Map<string, EngineConfig> {
  const engines = new Map<string, EngineConfig>()
  if (config.fleet.hosts) {
    for (const h of config.fleet.hosts) if (h.engine) engines.set(h.id, engineConfig(h.engine))
  } else if (config.engine) {
    // The detected machine is the fleet's one host, `local`; its containers share its network unless told
    // otherwise, so they reach the control plane where this machine does.
    engines.set('local', engineConfig(config.engine, 'host'))
  }
  return engines
}

/**
 * The runtime of the fleet: local processes (the default: no engine configured), one Docker Engine API
 * driver per host with an engine, and a Kubernetes cluster's driver for the hosts that stand for it.
 */
export function buildRuntime(
  config: Config,
  hostEnv: Record<string, string>,
  process: Pick<ProcessDriverOptions, 'sandbox' | 'trustedAccount' | 'limits'> = {},
  cluster?: { driver: RuntimeDriver; hostIds: string[] },
): HostRuntimes {
  const local: RuntimeDriver = new ProcessDriver({
    dataDir: config.dataDir,
    images: config.images,
    hostEnv,
    trustTenants: config.runtime.process.trustTenants,
    ...process,
  })
  const byHost = new Map<string, RuntimeDriver>()
  for (const [hostId, engine] of hostEngines(config))
    byHost.set(hostId, new DockerDriver({ hostId, engine, dataDir: config.dataDir }))
  for (const hostId of cluster?.hostIds ?? []) byHost.set(hostId, cluster!.driver)
  return new HostRuntimes(local, byHost)
}
