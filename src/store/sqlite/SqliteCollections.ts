import type Database from 'better-sqlite3'
import type { EndpointRecord, EndpointReference, EndpointStore, ReleaseRecord, ReleaseStore } from '../EndpointStore.js'
import type { SshKeysRecord, SshKeyStore } from '../SshKeyStore.js'
import type { TemplateRecord, TemplateStore } from '../TemplateStore.js'
import { SqliteDocuments } from './SqliteDocuments.js'

export class SqliteTemplateStore extends SqliteDocuments<TemplateRecord> implements TemplateStore {
  private readonly withRegistry = this.select(`account_id = ? AND json_extract(data, '$.registry') = ?`)
  constructor(db: Database.Database) {
    super(db, 'template')
  }
  async clearRegistry(accountId: string, registryId: string): Promise<number> {
    const hits = this.withRegistry(accountId, registryId)
    for (const t of hits) await this.update({ ...t, registry: null })
    return hits.length
  }
}

export class SqliteEndpointStore extends SqliteDocuments<EndpointRecord> implements EndpointStore {
  private readonly byTemplate = this.select(`account_id = ? AND json_extract(data, '$.templateId') = ?`)
  private readonly byRegistry = this.select(`account_id = ? AND json_extract(data, '$.registry') = ?`)
  private readonly byVolume = this.select(
    `account_id = ? AND EXISTS (SELECT 1 FROM json_each(data, '$.networkVolumes') WHERE value = ?)`,
  )
  constructor(db: Database.Database) {
    // Cached: every job submission and every GET of an endpoint reads one.
    super(db, 'endpoint', () => null, { cache: true })
  }
  async referencing(accountId: string, ref: EndpointReference): Promise<string[]> {
    const hits =
      'templateId' in ref
        ? this.byTemplate(accountId, ref.templateId)
        : 'registryId' in ref
          ? this.byRegistry(accountId, ref.registryId)
          : this.byVolume(accountId, ref.networkVolumeId)
    return hits.map((e) => e.id)
  }
}

export class SqliteReleaseStore implements ReleaseStore {
  private readonly docs: SqliteDocuments<ReleaseRecord>
  constructor(db: Database.Database) {
    this.docs = new SqliteDocuments<ReleaseRecord>(db, 'release', (r) => r.endpointId)
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

export class SqliteSshKeyStore implements SshKeyStore {
  private readonly docs: SqliteDocuments<SshKeysRecord>
  constructor(db: Database.Database) {
    this.docs = new SqliteDocuments<SshKeysRecord>(db, 'ssh_keys')
  }
  get(accountId: string): Promise<SshKeysRecord | undefined> {
    return this.docs.get(accountId)
  }
  async put(record: SshKeysRecord): Promise<void> {
    if (!(await this.docs.update(record))) await this.docs.insert(record)
  }
}
