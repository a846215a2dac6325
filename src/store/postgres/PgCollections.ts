import type { EndpointRecord, EndpointReference, EndpointStore, ReleaseRecord, ReleaseStore } from '../EndpointStore.js'
import type { SshKeysRecord, SshKeyStore } from '../SshKeyStore.js'
import type { TemplateRecord, TemplateStore } from '../TemplateStore.js'
import { PgDocuments } from './PgDocuments.js'
import { atomically, type PgQueryable } from './PgQueryable.js'

export class PgTemplateStore extends PgDocuments<TemplateRecord> implements TemplateStore {
  constructor(q: PgQueryable) {
    super(q, 'template')
  }
  clearRegistry(accountId: string, registryId: string): Promise<number> {
    // Read and rewrite in one transaction, with the rows locked, so a concurrent update is not lost.
    return atomically(this.q, async (q) => {
      const { rows } = await q.query<{ data: string }>(
        `SELECT data FROM documents WHERE kind = 'template' AND account_id = $1 AND data::jsonb ->> 'registry' = $2 ORDER BY seq FOR UPDATE`,
        [accountId, registryId],
      )
      const tx = new PgTemplateStore(q)
      for (const r of rows) await tx.update({ ...(JSON.parse(r.data) as TemplateRecord), registry: null })
      return rows.length
    })
  }
}

export class PgEndpointStore extends PgDocuments<EndpointRecord> implements EndpointStore {
  constructor(q: PgQueryable) {
    super(q, 'endpoint', () => null, { parsedAll: true })
  }
  async referencing(accountId: string, ref: EndpointReference): Promise<string[]> {
    const hits =
      'templateId' in ref
        ? await this.select(`account_id = $2 AND data::jsonb ->> 'templateId' = $3`, accountId, ref.templateId)
        : 'registryId' in ref
          ? await this.select(`account_id = $2 AND data::jsonb ->> 'registry' = $3`, accountId, ref.registryId)
          : await this.select(
              `account_id = $2 AND jsonb_exists(data::jsonb -> 'networkVolumes', $3)`,
              accountId,
              ref.networkVolumeId,
            )
    return hits.map((e) => e.id)
  }
}

export class PgReleaseStore implements ReleaseStore {
  private readonly docs: PgDocuments<ReleaseRecord>
  constructor(q: PgQueryable) {
    this.docs = new PgDocuments<ReleaseRecord>(q, 'release', (r) => r.endpointId)
  }
  insert(release: ReleaseRecord): Promise<void> {
    return this.docs.insert(release)
  }
  listByEndpoint(endpointId: string): Promise<ReleaseRecord[]> {
    return this.docs.listByParent(endpointId)
  }
  deleteByEndpoint(endpointId: string): Promise<number> {
    return this.docs.deleteByParent(endpointId)
  }
}

export class PgSshKeyStore implements SshKeyStore {
  constructor(private readonly q: PgQueryable) {}
  async get(accountId: string): Promise<SshKeysRecord | undefined> {
    const { rows } = await this.q.query<{ data: string }>(
      `SELECT data FROM documents WHERE kind = 'ssh_keys' AND id = $1`,
      [accountId],
    )
    return rows.length ? (JSON.parse(rows[0].data) as SshKeysRecord) : undefined
  }
  async put(r: SshKeysRecord): Promise<void> {
    // An upsert: two first registrations at once must not fail on the key.
    await this.q.query(
      `INSERT INTO documents (kind, id, account_id, parent_id, public, data, created_at) VALUES ('ssh_keys', $1, $2, NULL, false, $3, $4)
       ON CONFLICT (kind, id) DO UPDATE SET data = excluded.data`,
      [r.id, r.accountId, JSON.stringify(r), r.createdAt],
    )
  }
}
