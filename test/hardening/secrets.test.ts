import Database from 'better-sqlite3'
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import pino from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createEndpoint, endpointBody, waitFinal } from '../helpers/endpoints.js'
import { startTestServer, type TestServer } from '../helpers/server.js'

const SECRET = 'S3-SECRET-do-not-store-4f9a2c'
const CHOSEN_ADMIN_KEY = 'my-chosen-admin-key-0123456789-wxyz'

describe('secrets and files at rest', () => {
  let s: TestServer
  const log: string[] = []
  const parent = mkdtempSync(join(tmpdir(), 'hangar-secrets-'))
  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _enc, cb) {
        log.push(String(chunk))
        cb()
      },
    })
    s = await startTestServer(
      {
        adminApiKey: CHOSEN_ADMIN_KEY,
        images: {
          'test/raw-echo:latest': {
            command: [process.execPath, join(import.meta.dirname, '..', 'fixtures', 'raw-echo.mjs')],
            env: { RAW_ECHO_HIDE: SECRET },
          },
        },
      },
      // A data dir Hangar creates itself (mkdtemp would make it 0700 already).
      { logger: pino({ level: 'trace' }, sink), dataDir: join(parent, 'data') },
    )
  })
  afterAll(async () => {
    await s.stop()
    rmSync(parent, { recursive: true, force: true })
  })

  it('seals a job s3Config.accessSecret in the database, hands it to the worker in clear and never logs it', async () => {
    const ep = await createEndpoint(s, endpointBody('test/raw-echo:latest'))
    const s3Config = { accessId: 'AKIA1', accessSecret: SECRET, bucketName: 'b', endpointUrl: 'https://s3.example' }
    const run = await s.api('POST', `/v2/${ep.id}/run`, { input: { a: 1 }, s3Config })
    expect(run.status).toBe(200)
    const final = await waitFinal(s, ep.id, run.body.id, 30_000)
    expect(final.status).toBe('COMPLETED')
    // The worker got the secret in clear (its echo replaced it by "<seen>").
    expect(JSON.parse(final.output).s3Config).toEqual({ ...s3Config, accessSecret: '<seen>' })
    // Nothing in the data dir (database, WAL, anything else) holds the secret in clear.
    const db = new Database(join(s.dataDir, 'hangar.db'), { readonly: true })
    const stored = db.prepare('SELECT s3_config FROM jobs WHERE id = ?').pluck().get(run.body.id) as string
    db.close()
    expect(stored).not.toContain(SECRET)
    expect(JSON.parse(stored)).toMatchObject({ accessId: 'AKIA1', accessSecret: expect.stringMatching(/^v1:/) })
    for (const f of readdirSync(s.dataDir, { recursive: true, withFileTypes: true })) {
      if (f.isFile()) expect(readFileSync(join(f.parentPath, f.name)).includes(SECRET), `${f.name}`).toBe(false)
    }
    expect(log.join('')).not.toContain(SECRET)
  })

  it('keeps the data dir 0700 and its files 0600, the SQLite WAL and shared-memory files included', () => {
    expect(statSync(s.dataDir).mode & 0o777).toBe(0o700)
    const files = readdirSync(s.dataDir).filter((f) => statSync(join(s.dataDir, f)).isFile())
    expect(files).toEqual(expect.arrayContaining(['hangar.db', 'hangar.db-wal', 'hangar.db-shm', 'secret.key']))
    for (const f of files) expect(statSync(join(s.dataDir, f)).mode & 0o777, f).toBe(0o600)
  })

  it('shows no more of a chosen admin key than its last 4 characters, and 4 random ones of a generated key', async () => {
    const keys = await s.api('GET', '/v2/admin/keys')
    const admin =
      keys.body.keys?.find?.((k: { admin: boolean }) => k.admin) ??
      (keys.body as Array<{ admin: boolean; prefix: string }>).find((k) => k.admin)
    expect(admin.prefix).toBe('…wxyz')
    expect(JSON.stringify(keys.body)).not.toContain(CHOSEN_ADMIN_KEY.slice(0, 6))
    const created = await s.api('POST', '/v2/admin/keys', { account: 'admin', permission: 'READ_ONLY' })
    expect(created.status).toBe(201)
    expect(created.body.prefix).toMatch(/^hk_.{4}$/)
    expect(created.body.key.startsWith(created.body.prefix)).toBe(true)
  })
})
