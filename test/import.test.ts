import Database from 'better-sqlite3'
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { systemClock } from '../src/domain/clock.js'
import { RegistryService } from '../src/services/storage/RegistryService.js'
import { SecretBox } from '../src/services/SecretBox.js'
import { importFromSqlite, ImportSourceError } from '../src/store/importFromSqlite.js'
import { migrate as migratePg } from '../src/store/postgres/migrate.js'
import { createPool } from '../src/store/postgres/PgStore.js'
import { migrate as migrateSqlite } from '../src/store/sqlite/migrate.js'
import { createEndpoint, endpointBody, jobCall } from './helpers/endpoints.js'
import { createPod, podBody, waitPod } from './helpers/pods.js'
import { dropSchema, freshSchemaName, PG_TEST_URL, pgAvailableOrSkip } from './helpers/postgres.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

const BIN = fileURLToPath(new URL('../bin/hangar.js', import.meta.url))
const ED25519 = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGk6f2Q0b2xkZXIta2V5LWZvci10ZXN0cw me@laptop'
const PASSWORD = 'pw-import-5e4d3c2b1a'

const available = await pgAvailableOrSkip('the SQLite-to-PostgreSQL import tests')

/** Runs the built `hangar` CLI; resolves with its exit code and output. */
function hangar(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    child.on('exit', (code) => resolve({ code, stdout, stderr }))
  })
}

/** Rows per table of a PostgreSQL schema (bookkeeping included: a refused import must not touch it either). */
async function counts(schema: string): Promise<Record<string, number>> {
  const client = new pg.Client({ connectionString: PG_TEST_URL })
  await client.connect()
  try {
    const tables = (
      await client.query<{ table_name: string }>(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY 1",
        [schema],
      )
    ).rows
    const out: Record<string, number> = {}
    for (const { table_name: t } of tables)
      out[t] = Number((await client.query<{ n: string }>(`SELECT count(*) AS n FROM "${schema}"."${t}"`)).rows[0].n)
    return out
  } finally {
    await client.end()
  }
}

describe.skipIf(!available)('hangar import --from-sqlite', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hangar-import-'))
  const dump = join(dataDir, 'worker-env.json')
  const schema = freshSchemaName('hangar_import')
  const target = { HANGAR_DATABASE_URL: PG_TEST_URL, HANGAR_DATABASE_SCHEMA: schema }
  /** The manual worker: it records its protocol environment and leaves taking jobs to the test. */
  const images = {
    'test/manual:latest': {
      command: [process.execPath, join(import.meta.dirname, 'fixtures', 'envdump.mjs')],
      env: { DUMP_TO: dump },
    },
  }
  // The manual worker writes a file outside its own disk (in the data dir, even): no process sandbox for it.
  const runtime = { process: { sandbox: 'off', trustTenants: true } }

  /** What the SQLite install held, by the ids the API gave. */
  const made = {} as {
    alice: string
    aliceId: string
    template: string
    registry: string
    volume: string
    echo: string
    held: string
    completed: Array<{ id: string; output: unknown }>
    queued: string[]
    pod: string
  }
  let firstImport: { code: number | null; stdout: string; stderr: string }
  let s: TestServer | undefined

  beforeAll(async () => {
    const sqlite = await startTestServer({ images, runtime }, { dataDir, sqlite: true })
    try {
      made.alice = await sqlite.accountKey('import-alice')
      made.aliceId = (await sqlite.api('GET', '/v2/admin/accounts')).body.accounts.find(
        (a: { name: string }) => a.name === 'import-alice',
      ).id
      made.template = (
        await sqlite.api('POST', '/v2/templates', { name: 'moved', image: 'acme/moved:1' }, made.alice)
      ).body.id
      made.registry = (
        await sqlite.api(
          'POST',
          '/v2/registries',
          { name: 'private', username: 'robot', password: PASSWORD },
          made.alice,
        )
      ).body.id
      made.volume = (
        await sqlite.api('POST', '/v2/network-volumes', { name: 'models', size: 10, dataCenter: 'LOCAL-1' }, made.alice)
      ).body.id
      expect((await sqlite.api('PUT', '/v2/account/ssh-keys', { keys: [ED25519] }, made.alice)).status).toBe(200)

      made.echo = (await createEndpoint(sqlite, endpointBody('hangar/echo:latest', { name: 'echo' }), made.alice)).id
      made.completed = []
      for (let i = 0; i < 2; i++) {
        const id = (await jobCall(sqlite, 'POST', `/v2/${made.echo}/run`, { input: { done: i } }, { key: made.alice }))
          .body.id
        expect(
          (
            await jobCall(sqlite, 'GET', `/v2/${made.echo}/status-sync/${id}?wait=20000`, undefined, {
              key: made.alice,
            })
          ).body.status,
        ).toBe('COMPLETED')
        made.completed.push({ id, output: { done: i } })
      }
      // No worker may start here: these wait, in this order, one of them low priority (taken last).
      made.held = (
        await createEndpoint(
          sqlite,
          endpointBody('test/manual:latest', { name: 'held', workers: { min: 0, max: 0 } }),
          made.alice,
        )
      ).id
      made.queued = []
      for (const [i, lowPriority] of [false, true, false].entries()) {
        const r = await jobCall(
          sqlite,
          'POST',
          `/v2/${made.held}/run`,
          { input: { queued: i }, ...(lowPriority ? { policy: { lowPriority: true } } : {}) },
          { key: made.alice },
        )
        expect(r.status, JSON.stringify(r.body)).toBe(200)
        made.queued.push(r.body.id)
      }

      const pod = await createPod(sqlite, podBody({ name: 'moved-pod' }), made.alice)
      await waitPod(sqlite, pod.id, 'RUNNING', made.alice)
      expect((await sqlite.api('POST', `/v2/pods/${pod.id}/action`, { action: 'stop' }, made.alice)).status).toBe(200)
      await waitPod(sqlite, pod.id, 'EXITED', made.alice)
      made.pod = pod.id
    } finally {
      await sqlite.stop()
    }
    firstImport = await hangar(['import', '--from-sqlite', dataDir], target)
  }, 90_000)

  afterAll(async () => {
    await s?.stop()
    await dropSchema(schema)
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('copies every table in one go and prints what it copied', () => {
    expect(firstImport.stderr).toBe('')
    expect(firstImport.code).toBe(0)
    expect(firstImport.stdout).toContain(`into postgres 127.0.0.1:5432/test schema ${schema}`)
    const rows = Object.fromEntries(
      [...firstImport.stdout.matchAll(/^ {2}(\w+) +(\d+)$/gm)].map((m) => [m[1], Number(m[2])]),
    )
    expect(rows).toMatchObject({
      accounts: 2,
      documents: expect.any(Number),
      jobs: 5,
      pods: 1,
      usage_intervals: expect.any(Number),
    })
    expect(rows.api_keys).toBeGreaterThanOrEqual(2)
    expect(firstImport.stdout).toMatch(/secret\.key +registry passwords are sealed with it/)
  })

  it('refuses a target that holds data, changing nothing; --force replaces it', async () => {
    const before = await counts(schema)
    const refused = await hangar(['import', '--from-sqlite', join(dataDir, 'hangar.db')], target)
    expect(refused.code).toBe(6)
    expect(refused.stderr).toMatch(
      new RegExp(
        `error: PostgreSQL schema ${schema} already holds data \\(accounts: 2, api_keys: \\d+, .*\\); nothing was copied`,
      ),
    )
    expect(await counts(schema)).toEqual(before)

    const forced = await hangar(['import', '--from-sqlite', dataDir, '--force'], target)
    expect(forced.code, forced.stderr).toBe(0)
    expect(forced.stdout).toMatch(/deleted first \(--force\): accounts 2, /)
    expect(await counts(schema)).toEqual(before)
  })

  it('serves the moved data on PostgreSQL: keys, resources, finished jobs, the queue in its order, sealed secrets', async () => {
    s = await startTestServer(
      { images, runtime, databaseUrl: PG_TEST_URL, databaseSchema: schema, jobs: { takeWaitMs: 1_000 } },
      { dataDir },
    )
    expect(s.hangar.store.dialect).toBe('postgres')
    const { alice } = made
    // The admin key from the data dir and the account's key both open the API as before.
    expect((await s.api('GET', '/v2/admin/accounts')).body.accounts.map((a: { name: string }) => a.name)).toContain(
      'import-alice',
    )
    expect((await s.api('GET', `/v2/templates/${made.template}`, undefined, alice)).body).toMatchObject({
      name: 'moved',
      image: 'acme/moved:1',
    })
    expect((await s.api('GET', '/v2/registries', undefined, alice)).body).toEqual({
      registries: [{ id: made.registry, name: 'private' }],
    })
    expect((await s.api('GET', `/v2/network-volumes/${made.volume}`, undefined, alice)).body).toMatchObject({
      name: 'models',
      size: 10,
    })
    expect((await s.api('GET', '/v2/account/ssh-keys', undefined, alice)).body).toEqual({ keys: [ED25519] })
    expect((await s.api('GET', `/v2/pods/${made.pod}`, undefined, alice)).body).toMatchObject({
      name: 'moved-pod',
      status: 'EXITED',
    })
    expect((await s.api('GET', `/v2/serverless/${made.echo}`, undefined, alice)).body).toMatchObject({ name: 'echo' })
    for (const job of made.completed) {
      expect(
        (await jobCall(s, 'GET', `/v2/${made.echo}/status/${job.id}`, undefined, { key: alice })).body,
      ).toMatchObject({ id: job.id, status: 'COMPLETED', output: job.output })
    }

    // The registry password still opens: it was sealed with the data dir's secret.key.
    const registries = new RegistryService({
      store: s.hangar.store,
      clock: systemClock,
      secrets: SecretBox.open(join(dataDir, 'secret.key')),
    })
    expect(await registries.credentials(made.aliceId, made.registry)).toMatchObject({
      username: 'robot',
      password: PASSWORD,
    })

    // The queue counts (kept by triggers on PostgreSQL) came along with the copied jobs.
    expect((await jobCall(s, 'GET', `/v2/${made.held}/health`, undefined, { key: alice })).body.jobs).toMatchObject({
      inQueue: 3,
      inProgress: 0,
    })
    // A job submitted after the move queues behind the moved ones (the sequence was set past them).
    const after = (await jobCall(s, 'POST', `/v2/${made.held}/run`, { input: { after: true } }, { key: alice })).body
      .id as string
    expect((await s.api('PATCH', `/v2/serverless/${made.held}`, { workers: { min: 1, max: 1 } }, alice)).status).toBe(
      200,
    )
    const { env } = await until(
      async () =>
        existsSync(dump) ? (JSON.parse(readFileSync(dump, 'utf8')) as { env: Record<string, string> }) : undefined,
      20_000,
      'the manual worker to start',
    )
    const taken: string[] = []
    for (let i = 0; i < 4; i++) {
      const r = await fetch(`${env.RUNPOD_WEBHOOK_GET_JOB}&job_in_progress=0`, {
        headers: { authorization: env.RUNPOD_AI_API_KEY },
      })
      expect(r.status).toBe(200)
      const job = (await r.json()) as { id: string }
      taken.push(job.id)
      const done = await fetch(env.RUNPOD_WEBHOOK_POST_OUTPUT.replace('$ID', job.id), {
        method: 'POST',
        headers: { authorization: env.RUNPOD_AI_API_KEY, 'content-type': 'application/json' },
        body: JSON.stringify({ output: 'ok' }),
      })
      expect(done.status).toBe(200)
    }
    expect(taken).toEqual([made.queued[0], made.queued[2], after, made.queued[1]])
  }, 60_000)
})

describe.skipIf(!available)('importFromSqlite', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hangar-import-unit-'))
  const schema = freshSchemaName('hangar_import_u')
  afterAll(async () => {
    await dropSchema(schema)
    rmSync(dir, { recursive: true, force: true })
  })

  /** A migrated, empty SQLite file at `dir/<name>/hangar.db`. */
  const freshSqlite = (name: string): string => {
    const file = join(dir, name, 'hangar.db')
    mkdirSync(join(dir, name), { recursive: true })
    const db = new Database(file)
    migrateSqlite(db)
    db.close()
    return file
  }

  it('knows every table and column the SQLite migrations create: the PostgreSQL migrations have them all', async () => {
    const db = new Database(freshSqlite('parity'), { readonly: true })
    const sqlite = Object.fromEntries(
      (
        db
          .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
          .all() as Array<{ name: string }>
      ).map(({ name }) => [
        name,
        (db.prepare('SELECT name FROM pragma_table_info(?) ORDER BY name').all(name) as Array<{ name: string }>).map(
          (c) => c.name,
        ),
      ]),
    )
    db.close()
    const { pool } = createPool({ url: PG_TEST_URL, schema, poolSize: 1 })
    try {
      await migratePg(pool, schema)
      const { rows } = await pool.query<{ t: string; c: string }>(
        'SELECT table_name AS t, column_name AS c FROM information_schema.columns WHERE table_schema = $1 ORDER BY table_name, column_name',
        [schema],
      )
      const postgres: Record<string, string[]> = {}
      for (const r of rows) (postgres[r.t] ??= []).push(r.c)
      // Tables only PostgreSQL has, derived from the others by triggers (an import fills them as it copies).
      const derived = ['job_counts']
      for (const t of derived) expect(postgres[t], t).toBeDefined()
      for (const t of derived) delete postgres[t]
      expect(postgres).toEqual(sqlite)
    } finally {
      await pool.end()
    }
  })

  it('refuses a SQLite table it does not know, copying nothing', async () => {
    const file = freshSqlite('unknown-table')
    const db = new Database(file)
    db.exec("CREATE TABLE gadgets (id TEXT PRIMARY KEY); INSERT INTO gadgets VALUES ('g1')")
    db.close()
    const other = freshSchemaName('hangar_import_x')
    try {
      const err = await importFromSqlite({ from: file, url: PG_TEST_URL, schema: other }).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(ImportSourceError)
      expect((err as Error).message).toContain('table gadgets has no counterpart in PostgreSQL schema')
      const held = Object.entries(await counts(other)).filter(([t, n]) => t !== 'schema_migrations' && n > 0)
      expect(held).toEqual([])
    } finally {
      await dropSchema(other)
    }
  })

  it('refuses an install a migration behind, naming the command that brings it up', async () => {
    const file = freshSqlite('behind')
    const db = new Database(file)
    db.exec('DELETE FROM schema_migrations WHERE version = 60')
    db.close()
    await expect(importFromSqlite({ from: join(dir, 'behind'), url: PG_TEST_URL, schema })).rejects.toThrow(
      `lacks migrations 60 of this Hangar: run \`hangar migrate --data-dir ${join(dir, 'behind')}\``,
    )
  })

  it('refuses a data dir whose server still runs', async () => {
    const s = await startTestServer({}, { sqlite: true })
    try {
      await expect(importFromSqlite({ from: s.dataDir, url: PG_TEST_URL, schema })).rejects.toThrow(
        /is in use by another Hangar .*\(the import reads a stopped install\)/,
      )
    } finally {
      await s.stop()
    }
  })
})
