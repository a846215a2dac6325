import type { CatalogService } from '../catalog/CatalogService.js'
import type { CreateEndpoint, Endpoint, ReleaseList, UpdateEndpoint } from '../contract/endpoint.js'
import { iso, type Clock } from '../domain/clock.js'
import { toEndpoint, type EndpointRecord, type EndpointSpec, type ReleaseRecord } from '../domain/endpoint.js'
import { createSpec, updateSpec, type AccountView, type CatalogView, type TemplateView } from '../domain/endpointRules.js'
import { releaseDiff } from '../domain/endpointRulesRelease.js'
import { DomainError, notFound } from '../domain/errors.js'
import { newId } from '../domain/ids.js'
import type { DocumentStore, Store } from '../store/Store.js'
import type { Principal } from './AccountService.js'
import type { NetworkVolumeService } from './NetworkVolumeService.js'
import type { RegistryService } from './RegistryService.js'
import type { TemplateService } from './TemplateService.js'

/** What EndpointService needs. */
export interface EndpointServiceDeps {
  store: Store
  catalog: CatalogService
  clock: Clock
  templates: Pick<TemplateService, 'resolveForAccount'>
  registries: Pick<RegistryService, 'exists'>
  networkVolumes: Pick<NetworkVolumeService, 'get'>
  /** Base URL clients use; read when answering so requestUrls follow the configured public URL. */
  publicUrl: () => string
  /** Release versions of the endpoint's active workers, for rollout numbers; none until workers exist. */
  workerVersions?: (endpointId: string) => Promise<number[]>
}

/**
 * Serverless endpoints: create, read, PATCH, delete, and the releases that record each change to what
 * their workers run. The rules live in domain/endpointRules; this class looks up what they read (template,
 * catalog, the caller's volumes and registries) and stores the result. Another account's endpoint is
 * answered exactly like a missing one (404) everywhere.
 */
export class EndpointService {
  private readonly endpoints: DocumentStore<EndpointRecord>
  private readonly releaseDocs: DocumentStore<ReleaseRecord>

  constructor(private readonly deps: EndpointServiceDeps) {
    this.endpoints = deps.store.endpoints as DocumentStore<EndpointRecord>
    this.releaseDocs = deps.store.releases as DocumentStore<ReleaseRecord>
  }

  async create(p: Principal, body: CreateEndpoint): Promise<Endpoint> {
    const template = body.templateId === undefined ? null : await this.template(p.accountId, body.templateId)
    const account = await this.accountView(p.accountId, body.networkVolumes ?? [], [body.registry, template?.registry])
    const spec = createSpec(body, { catalog: this.catalogView(), account, template })
    const now = iso(this.deps.clock.now())
    const record: EndpointRecord = { id: newId(), accountId: p.accountId, createdAt: now, version: 1, ...spec }
    await this.deps.store.transaction(async () => {
      await this.endpoints.insert(record)
      await this.releaseDocs.insert(this.release(record, releaseDiff(null, spec), now))
    })
    return this.view(record)
  }

  /** The caller's endpoints, oldest first; a RESTRICTED key sees only the endpoints it is limited to. */
  async list(p: Principal): Promise<Endpoint[]> {
    const all = await this.endpoints.list({ accountId: p.accountId })
    return all.filter((e) => p.permission !== 'RESTRICTED' || p.endpointIds.includes(e.id)).map((e) => this.view(e))
  }

  async get(p: Principal, id: string): Promise<Endpoint> {
    return this.view(await this.owned(p.accountId, id))
  }

  /**
   * R14: applies the PATCH and checks every rule on the result. A change to what workers run bumps the
   * version and stores a release; a PATCH changing only name, workers, scaling, timeout or flashboot does not.
   */
  async update(p: Principal, id: string, body: UpdateEndpoint): Promise<Endpoint> {
    const before = await this.owned(p.accountId, id)
    const template = body.templateId === undefined ? null : await this.template(p.accountId, body.templateId)
    const account = await this.accountView(p.accountId, body.networkVolumes ?? before.networkVolumes, [body.registry, template?.registry, before.registry])
    // The read above and the write below only await the store (no network), so no other request can
    // interleave; the re-read inside the transaction still guards against an adapter where one could.
    return this.deps.store.transaction(async () => {
      const current = await this.owned(p.accountId, id)
      const spec = updateSpec(current, body, { catalog: this.catalogView(), account, template })
      const diff = releaseDiff(specOf(current), spec)
      const next: EndpointRecord = { ...spec, id: current.id, accountId: current.accountId, createdAt: current.createdAt, version: current.version + (diff.length ? 1 : 0) }
      await this.endpoints.update(next)
      if (diff.length) await this.releaseDocs.insert(this.release(next, diff, iso(this.deps.clock.now())))
      return this.view(next)
    })
  }

  /** R15: deletes the endpoint and its releases; then it is 404 like any unknown id. */
  async delete(p: Principal, id: string): Promise<void> {
    await this.owned(p.accountId, id)
    await this.deps.store.transaction(async () => {
      for (const r of await this.releaseDocs.list({ parentId: id })) await this.releaseDocs.delete(r.id)
      await this.endpoints.delete(id)
    })
  }

  /** The endpoint's releases, newest first, with the rollout of the newest over its active workers. */
  async releases(p: Principal, id: string): Promise<ReleaseList> {
    const endpoint = await this.owned(p.accountId, id)
    const versions = (await this.deps.workerVersions?.(id)) ?? []
    const onLatest = versions.filter((v) => v === endpoint.version).length
    const releases = (await this.releaseDocs.list({ parentId: id })).reverse()
    return {
      endpointVersion: endpoint.version,
      rollout: {
        inProgress: onLatest < versions.length,
        workersOnLatest: onLatest,
        workersTotal: versions.length,
        percentOnLatest: versions.length ? Math.round((onLatest / versions.length) * 1000) / 10 : 0,
      },
      releases: releases.map(({ accountId: _a, endpointId: _e, ...r }) => ({ ...r, workerCount: versions.filter((v) => v === r.version).length })),
    }
  }

  /** The stored endpoint, whoever owns it (for the job and worker services); undefined when unknown. */
  async record(id: string): Promise<EndpointRecord | undefined> {
    return this.endpoints.get(id)
  }

  private async owned(accountId: string, id: string): Promise<EndpointRecord> {
    const e = await this.endpoints.get(id)
    if (!e || e.accountId !== accountId) throw notFound('endpoint', id)
    return e
  }

  private view(record: EndpointRecord): Endpoint {
    return toEndpoint(record, this.deps.publicUrl())
  }

  private release(endpoint: EndpointRecord, diff: ReleaseRecord['diff'], createdAt: string): ReleaseRecord {
    return {
      id: newId('rel_'),
      accountId: endpoint.accountId,
      endpointId: endpoint.id,
      version: endpoint.version,
      source: 'MANUAL',
      buildId: null,
      // Hangar's users are accounts; the account that made the change.
      createdByUserId: endpoint.accountId,
      createdAt,
      workerCount: 0,
      diff,
    }
  }

  /** R6: own, public or official template; unknown and inaccessible ids are 404 (TemplateService decides). */
  private async template(accountId: string, templateId: string): Promise<TemplateView> {
    return this.deps.templates.resolveForAccount(accountId, templateId)
  }

  /** Which of the named volumes and registries are the caller's; the rules turn the rest into 400s. */
  private async accountView(accountId: string, volumeIds: readonly string[], registryIds: ReadonlyArray<string | null | undefined>): Promise<AccountView> {
    const volumes = new Map<string, { dataCenter: string }>()
    for (const id of new Set(volumeIds)) {
      try {
        volumes.set(id, { dataCenter: (await this.deps.networkVolumes.get(accountId, id)).dataCenter })
      } catch (err) {
        if (!(err instanceof DomainError && err.kind === 'not_found')) throw err
      }
    }
    const registries = new Set<string>()
    for (const id of new Set(registryIds)) if (id && (await this.deps.registries.exists(accountId, id))) registries.add(id)
    return { volumes, registries }
  }

  private catalogView(): CatalogView {
    const { catalog } = this.deps
    return { pools: catalog.pools(), gpuMaxCount: (id) => catalog.gpuType(id)?.maxCount ?? 8, cpuFlavor: (id) => catalog.cpuFlavor(id), hasDataCenter: (id) => catalog.dataCenter(id) !== undefined }
  }
}

function specOf(record: EndpointRecord): EndpointSpec {
  const { id: _i, accountId: _a, createdAt: _c, version: _v, ...spec } = record
  return spec
}
