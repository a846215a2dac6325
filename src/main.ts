import { chmodSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import pino from 'pino'
import { buildApp, type App } from './api/app.js'
import { CatalogService } from './catalog/CatalogService.js'
import { detectMachine } from './catalog/detect.js'
import { publicBaseUrl, type Config } from './config.js'
import { systemClock, type Clock } from './domain/clock.js'
import { AccountService } from './services/AccountService.js'
import { SqliteStore } from './store/sqlite/SqliteStore.js'
import type { Store } from './store/Store.js'

/** A running control plane. */
export interface Hangar {
  /** Base URL clients use. */
  readonly url: string
  /** The admin key when this start created it (first start), else null. */
  readonly adminKey: string | null
  /** Where a generated admin key was written, or null when it came from HANGAR_ADMIN_API_KEY. */
  readonly adminKeyFile: string | null
  readonly app: App
  readonly store: Store
  readonly catalog: CatalogService
  /** Stops accepting requests, finishes those in flight, then closes the store. */
  stop(): Promise<void>
}

export interface StartOptions {
  clock?: Clock
  /** Overrides the pino logger built from config.logLevel (tests pass false). */
  logger?: pino.Logger | false
}

/** The composition root: config -> store -> services -> api, then listen. */
export async function startHangar(config: Config, opts: StartOptions = {}): Promise<Hangar> {
  const clock = opts.clock ?? systemClock
  const logger = opts.logger ?? (config.logLevel === 'silent' ? false : pino({ level: config.logLevel }))
  mkdirSync(config.dataDir, { recursive: true })

  const store = new SqliteStore(join(config.dataDir, 'hangar.db'))
  const accounts = new AccountService({ store, clock })
  const adminKey = await accounts.bootstrap(config.adminApiKey)
  let adminKeyFile: string | null = null
  if (adminKey && !config.adminApiKey) {
    adminKeyFile = join(config.dataDir, 'admin-key')
    writeFileSync(adminKeyFile, adminKey + '\n', { mode: 0o600 })
    chmodSync(adminKeyFile, 0o600)
  } else if (!config.adminApiKey) {
    adminKeyFile = join(config.dataDir, 'admin-key')
  }

  const machine = await detectMachine(config.fleet.detectGpus)
  const catalog = new CatalogService(config.catalog, config.fleet, machine)

  let url = ''
  const app = await buildApp({ logger: logger || false, bodyLimit: config.bodyLimit, accounts, catalog, publicUrl: () => url })
  try {
    await app.listen({ host: config.host, port: config.port })
  } catch (err) {
    await store.close()
    throw err
  }
  const address = app.server.address()
  url = publicBaseUrl(config, typeof address === 'object' && address ? address.port : config.port)

  let stopping: Promise<void> | undefined
  return {
    url,
    adminKey,
    adminKeyFile,
    app,
    store,
    catalog,
    stop: () =>
      (stopping ??= (async () => {
        // Close the server first (it waits for in-flight requests), and only then the store they use.
        await app.close()
        await store.close()
      })()),
  }
}
