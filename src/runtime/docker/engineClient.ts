import { readFileSync } from 'node:fs'
import Docker from 'dockerode'
import type { EngineConfig } from './EngineConfig.js'

/** A Docker Engine API client for `engine.address`. */
export function engineClient(engine: Pick<EngineConfig, 'address' | 'tls'>): Docker {
  const url = new URL(engine.address)
  if (url.protocol === 'unix:') return new Docker({ socketPath: url.pathname })
  if (url.protocol === 'ssh:') {
    return new Docker({
      protocol: 'ssh',
      host: url.hostname,
      port: url.port ? Number(url.port) : 22,
      username: url.username || undefined,
    })
  }
  const tls = engine.tls
    ? { ca: readFileSync(engine.tls.ca), cert: readFileSync(engine.tls.cert), key: readFileSync(engine.tls.key) }
    : {}
  return new Docker({
    protocol: engine.tls ? 'https' : 'http',
    host: url.hostname,
    port: url.port ? Number(url.port) : engine.tls ? 2376 : 2375,
    ...tls,
  })
}
