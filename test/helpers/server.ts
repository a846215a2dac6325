import { createHash } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseConfig } from '../../src/config.js'
import { startHangar, type Hangar, type StartOptions } from '../../src/main.js'
import { afterAll } from 'vitest'
import { dropSchema, freshSchemaName } from './postgres.js'

/** PostgreSQL schemas of caller-owned data dirs: they outlive a stop (a restart reuses them), not the test file. */
const keptSchemas = new Set<string>()
afterAll(async () => {
  for (const schema of keptSchemas) await dropSchema(schema, process.env.HANGAR_TEST_DATABASE_URL)
  keptSchemas.clear()
})

export interface ApiResponse<T = any> {
  status: number
  headers: Headers
  body: T
}

export interface TestServer {
  hangar: Hangar
  url: string
  adminKey: string
  dataDir: string
  /** Calls the API with `key` (the admin key by default; null sends no Authorization header). */
  api<T = any>(method: string, path: string, body?: unknown, key?: string | null): Promise<ApiResponse<T>>
  /** Creates an account and one key for it; returns the key. */
  accountKey(name: string, permission?: 'ALL' | 'READ_ONLY' | 'RESTRICTED', endpointIds?: string[]): Promise<string>
  stop(): Promise<void>
}

/**
 * Starts a real Hangar on an ephemeral port with a fresh temporary data dir. With HANGAR_TEST_DATABASE_URL
 * set, its store is PostgreSQL on a schema of its own, dropped on stop; a caller that passes its own
 * `dataDir` (to restart on the same data) gets a schema named after that dir, kept until the test file ends.
 * `overrides` is raw configuration (validated and defaulted like a config file); `sqlite: true` keeps the
 * embedded store whatever HANGAR_TEST_DATABASE_URL says (a test of moving from SQLite needs one).
 */
export async function startTestServer(
  overrides: Record<string, unknown> = {},
  opts: Pick<StartOptions, 'clock' | 'monotonic' | 'configureApp' | 'logger' | 'runtime'> & {
    dataDir?: string
    sqlite?: boolean
  } = {},
): Promise<TestServer> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'hangar-test-'))
  const pgUrl = opts.sqlite ? undefined : process.env.HANGAR_TEST_DATABASE_URL
  const schema =
    pgUrl && overrides.databaseUrl === undefined
      ? opts.dataDir
        ? `hangar_t_${createHash('sha256').update(opts.dataDir).digest('hex').slice(0, 16)}`
        : freshSchemaName()
      : undefined
  if (schema && opts.dataDir) keptSchemas.add(schema)
  const database = schema ? { databaseUrl: pgUrl, databaseSchema: schema } : {}
  const config = parseConfig({
    host: '127.0.0.1',
    port: 0,
    logLevel: 'silent',
    dataDir,
    fleet: { detectGpus: false },
    ...database,
    ...overrides,
  })
  const hangar = await startHangar(config, {
    clock: opts.clock,
    monotonic: opts.monotonic,
    logger: opts.logger ?? false,
    configureApp: opts.configureApp,
    runtime: opts.runtime,
  })
  const adminKey = hangar.adminKey ?? (await import('node:fs')).readFileSync(join(dataDir, 'admin-key'), 'utf8').trim()

  const api = async <T = any>(
    method: string,
    path: string,
    body?: unknown,
    key: string | null = adminKey,
  ): Promise<ApiResponse<T>> => {
    const headers: Record<string, string> = {}
    if (key !== null) headers.authorization = `Bearer ${key}`
    if (body !== undefined) headers['content-type'] = 'application/json'
    const res = await fetch(hangar.url + path, {
      method,
      headers,
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    })
    const text = await res.text()
    let parsed: unknown = text
    try {
      parsed = text ? JSON.parse(text) : undefined
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, headers: res.headers, body: parsed as T }
  }

  return {
    hangar,
    url: hangar.url,
    adminKey,
    dataDir,
    api,
    async accountKey(name, permission = 'ALL', endpointIds) {
      const acc = await api('POST', '/v2/admin/accounts', { name })
      if (acc.status !== 201 && acc.status !== 409)
        throw new Error(`account ${name}: ${acc.status} ${JSON.stringify(acc.body)}`)
      const key = await api('POST', '/v2/admin/keys', {
        account: name,
        permission,
        ...(endpointIds ? { endpointIds } : {}),
      })
      if (key.status !== 201) throw new Error(`key for ${name}: ${key.status} ${JSON.stringify(key.body)}`)
      return key.body.key as string
    },
    async stop() {
      await hangar.stop()
      if (!opts.dataDir) {
        // Pods outlive their control plane by design (a restart adopts them); this data dir goes with the test,
        // so what still runs in it goes too.
        killWorkloadsIn(dataDir)
        rmSync(dataDir, { recursive: true, force: true })
      }
      if (schema && !opts.dataDir) await dropSchema(schema, pgUrl)
    },
  }
}

/** SIGKILLs the process groups of the workloads (supervisors, sandboxes, programs) whose working directory is in `dir`. */
function killWorkloadsIn(dir: string): void {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    try {
      if (!readlinkSync(`/proc/${d}/cwd`).startsWith(`${dir}/`)) continue
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8')
      const pgrp = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2])
      if (pgrp === Number(d)) process.kill(-pgrp, 'SIGKILL')
    } catch {
      // gone meanwhile, not ours, or not on Linux
    }
  }
}
