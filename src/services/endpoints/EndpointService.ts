import type { ChangeFeed } from '../../replicas/ChangeFeed.js'
import type { QuotaService } from '../accounts/QuotaService.js'
import type { CatalogService } from '../../catalog/CatalogService.js'
import type {
  CreatedEndpoint,
  CreateEndpoint,
  Endpoint,
  ReleaseList,
  RotatedWebhookSecret,
  UpdateEndpoint,
} from '../../contract/endpoint.js'
import { iso, type Clock } from '../../domain/clock.js'
import {
  toEndpoint,
  type EndpointRecord,
  type EndpointSpec,
  type ReleaseRecord,
} from '../../domain/endpoints/endpoint.js'
import {
  createSpec,
  updateSpec,
  type AccountView,
  type CatalogView,
  type TemplateView,
} from '../../domain/endpoints/endpointRules.js'
import { releaseDiff } from '../../domain/endpoints/endpointRulesRelease.js'
import { DomainError, notFound } from '../../domain/errors.js'
import { newId } from '../../domain/ids.js'
import type { EndpointStore, ReleaseStore } from '../../store/EndpointStore.js'
import type { Collections, Store } from '../../store/Store.js'
import type { Principal } from '../accounts/AccountService.js'
import type { NetworkVolumeService } from '../storage/NetworkVolumeService.js'
import type { RegistryService } from '../storage/RegistryService.js'
import type { TemplateService } from './TemplateService.js'
import type { WebhookSecrets } from '../jobs/WebhookSecrets.js'

/** How long traffic to a LOAD_BALANCER endpoint may use an endpoint read before reading it again. */
const LB_CACHE_MS = 1_000

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
  /** The load-balancer domain, when LOAD_BALANCER endpoints are addressed by host (`{id}.{domain}`). */
  lbDomain?: string
  /** Release versions of the endpoint's active workers, for rollout numbers; none until workers exist. */
  workerVersions?: (endpointId: string) => Promise<number[]>
  /** Other control-plane processes: their endpoint changes drop this one's cached copy (and ours theirs). */
  feed?: ChangeFeed
  /** The secrets signing each endpoint's job webhooks, made with the endpoint. */
  webhookSecrets: WebhookSecrets
  /** Account quotas: workers.max summed over an account's endpoints, GPUs of workers.min (absent: none). */
  quotas?: Pick<QuotaService, 'admitEndpoint'>
}

/**
 * Serverless endpoints: create, read, PATCH, delete, and the releases that record each change to what
 * their workers run. The rules live in domain/endpointRules; this class looks up what they read (template,
 * catalog, the caller's volumes and registries) and stores the result. Another account's endpoint is
 * answered exactly like a missing one (404) everywhere.
 */
export class EndpointService {
  private readonly endpoints: EndpointStore
  private readonly releaseDocs: ReleaseStore
  /** LOAD_BALANCER endpoints read by traffic, kept briefly: every proxied request needs one. */
  private readonly lbCache = new Map<string, { record: EndpointRecord; until: number }>()

  constructor(private readonly deps: EndpointServiceDeps) {
    this.endpoints = deps.store.endpoints
    this.releaseDocs = deps.store.releases
    deps.feed?.on('endpoint.changed', (id) => this.lbCache.delete(id))
  }

  /** Creates the endpoint with its webhook signing secret, which the answer shows (and nothing later does). */
  async create(p: Principal, body: CreateEndpoint): Promise<CreatedEndpoint> {
    const template = body.templateId === undefined ? null : await this.template(p.accountId, body.templateId)
    const account = await this.accountView(p.accountId, body.networkVolumes ?? [], [body.registry, template?.registry])
    const spec = createSpec(body, { catalog: this.catalogView(), account, template })
    const now = iso(this.deps.clock.now())
    const record: EndpointRecord = { id: newId(), accountId: p.accountId, createdAt: now, version: 1, ...spec }
    const webhookSecret = await this.deps.store.transaction(async (tx) => {
      await this.deps.quotas?.admitEndpoint(tx, null, record)
      await tx.endpoints.insert(record)
      await tx.releases.insert(this.release(record, releaseDiff(null, spec), now))
      return this.deps.webhookSecrets.create(tx, record)
    })
    return { ...this.view(record), webhookSecret }
  }

  /** A new webhook signing secret (shown this once); the current one keeps signing for the overlap window. */
  async rotateWebhookSecret(p: Principal, id: string): Promise<RotatedWebhookSecret> {
    await this.owned(p.accountId, id)
    return this.deps.webhookSecrets.rotate(p.accountId, id)
  }

  /** The caller's endpoints, oldest first; a RESTRICTED key sees only the endpoints it is limited to. */
  async list(p: Principal): Promise<Endpoint[]> {
    const all = await this.endpoints.list(p.accountId)
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
    const account = await this.accountView(p.accountId, body.networkVolumes ?? before.networkVolumes, [
      body.registry,
      template?.registry,
      before.registry,
    ])
    // The re-read inside the transaction sees any change made since the checks above.
    this.forget(id)
    return this.deps.store.transaction(async (tx) => {
      const current = await this.owned(p.accountId, id, tx)
      const spec = updateSpec(current, body, { catalog: this.catalogView(), account, template })
      const diff = releaseDiff(specOf(current), spec)
      const next: EndpointRecord = {
        ...spec,
        id: current.id,
        accountId: current.accountId,
        createdAt: current.createdAt,
        version: current.version + (diff.length ? 1 : 0),
      }
      await this.deps.quotas?.admitEndpoint(tx, current, next)
      await tx.endpoints.update(next)
      if (diff.length) await tx.releases.insert(this.release(next, diff, iso(this.deps.clock.now())))
      return this.view(next)
    })
  }

  /** Drops the cached copy of an endpoint here and on the other processes. */
  private forget(id: string): void {
    this.lbCache.delete(id)
    this.deps.feed?.publish('endpoint.changed', id)
  }

  /** R15: deletes the endpoint and its releases; then it is 404 like any unknown id. */
  async delete(p: Principal, id: string): Promise<void> {
    await this.owned(p.accountId, id)
    this.forget(id)
    await this.deps.store.transaction(async (tx) => {
      await tx.releases.deleteByEndpoint(id)
      await this.deps.webhookSecrets.delete(tx, id)
      await tx.endpoints.delete(id)
    })
  }

  /** The endpoint's releases, newest first, with the rollout of the newest over its active workers. */
  async releases(p: Principal, id: string): Promise<ReleaseList> {
    const endpoint = await this.owned(p.accountId, id)
    const versions = (await this.deps.workerVersions?.(id)) ?? []
    const onLatest = versions.filter((v) => v === endpoint.version).length
    const releases = (await this.releaseDocs.listByEndpoint(id)).reverse()
    return {
      endpointVersion: endpoint.version,
      rollout: {
        inProgress: onLatest < versions.length,
        workersOnLatest: onLatest,
        workersTotal: versions.length,
        percentOnLatest: versions.length ? Math.round((onLatest / versions.length) * 1000) / 10 : 0,
      },
      releases: releases.map(({ accountId: _a, endpointId: _e, ...r }) => ({
        ...r,
        workerCount: versions.filter((v) => v === r.version).length,
      })),
    }
  }

  /** The stored endpoint, whoever owns it (for the job and worker services); undefined when unknown. */
  async record(id: string): Promise<EndpointRecord | undefined> {
    return this.endpoints.get(id)
  }

  /**
   * The LOAD_BALANCER endpoint a request addresses: 404 for an unknown or foreign one, 400 for a queue
   * endpoint (it has no base URL for traffic; its jobs go to /v2/{id}/run).
   */
  async loadBalancer(p: Principal, id: string): Promise<EndpointRecord> {
    // Read at most once a second per endpoint: changes made through this process apply at once (the cache
    // entry is dropped), those of another replica within LB_CACHE_MS.
    const now = performance.now()
    const hit = this.lbCache.get(id)
    const ep =
      hit && hit.until > now && hit.record.accountId === p.accountId ? hit.record : await this.owned(p.accountId, id)
    if (hit?.record !== ep) {
      if (this.lbCache.size > 10_000) this.lbCache.clear()
      this.lbCache.set(id, { record: ep, until: now + LB_CACHE_MS })
    }
    if (ep.type !== 'LOAD_BALANCER')
      throw new DomainError(
        'bad_request',
        `endpoint ${JSON.stringify(id)} is a QUEUE endpoint: send jobs to /v2/${id}/run or /v2/${id}/runsync, not requests to a base URL`,
      )
    return ep
  }

  private async owned(
    accountId: string,
    id: string,
    tx: Pick<Collections, 'endpoints'> = this.deps.store,
  ): Promise<EndpointRecord> {
    const e = await tx.endpoints.get(id)
    if (!e || e.accountId !== accountId) throw notFound('endpoint', id)
    return e
  }

  /**
   * The API view of a record. A frozen record (the store's cached copy, unchanged until written) keeps its
   * view, frozen too: a GET of an endpoint then builds nothing but its JSON (the copy without the internal
   * fields and the request URLs were 4 % of a GET's CPU in a profile).
   */
  private view(record: EndpointRecord): Endpoint {
    const base = this.deps.publicUrl()
    const kept = this.views.get(record)
    if (kept?.base === base) return kept.view
    const view = toEndpoint(record, base, this.deps.lbDomain)
    if (!Object.isFrozen(record)) return view
    Object.freeze(view.requestUrls)
    this.views.set(record, { base, view: Object.freeze(view) })
    return view
  }

  /** Views of frozen records (see view): dropped with the record. */
  private readonly views = new WeakMap<EndpointRecord, { base: string; view: Endpoint }>()

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
  private async accountView(
    accountId: string,
    volumeIds: readonly string[],
    registryIds: ReadonlyArray<string | null | undefined>,
  ): Promise<AccountView> {
    const volumes = new Map<string, { dataCenter: string }>()
    for (const id of new Set(volumeIds)) {
      try {
        volumes.set(id, { dataCenter: (await this.deps.networkVolumes.get(accountId, id)).dataCenter })
      } catch (err) {
        if (!(err instanceof DomainError && err.kind === 'not_found')) throw err
      }
    }
    const registries = new Set<string>()
    for (const id of new Set(registryIds))
      if (id && (await this.deps.registries.exists(accountId, id))) registries.add(id)
    return { volumes, registries }
  }

  private catalogView(): CatalogView {
    const { catalog } = this.deps
    return {
      pools: catalog.pools(),
      gpuMaxCount: (id) => catalog.gpuType(id)?.maxCount ?? 8,
      cpuFlavor: (id) => catalog.cpuFlavor(id),
      hasDataCenter: (id) => catalog.dataCenter(id) !== undefined,
    }
  }
}

function specOf(record: EndpointRecord): EndpointSpec {
  const { id: _i, accountId: _a, createdAt: _c, version: _v, ...spec } = record
  return spec
}
