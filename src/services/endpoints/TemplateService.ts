import { OFFICIAL_TEMPLATES, officialTemplate } from '../../catalog/officialTemplates.js'
import type { CreateTemplate, Template, TemplateSource, UpdateTemplate } from '../../contract/template.js'
import { iso, type Clock } from '../../domain/clock.js'
import { resolveCommand } from '../../domain/endpoints/containerCommand.js'
import { notFound } from '../../domain/errors.js'
import { newId } from '../../domain/ids.js'
import type { Store } from '../../store/Store.js'
import type { TemplateRecord, TemplateStore } from '../../store/TemplateStore.js'
import { refuseDeleteInUse } from '../inUse.js'
import type { RegistryService } from '../storage/RegistryService.js'

export type { TemplateRecord } from '../../store/TemplateStore.js'

/** Container disk of a template that does not say, GB. */
export const DEFAULT_TEMPLATE_DISK = 20
/** Most templates one catalog page returns (the catalog has no pagination). */
const CATALOG_LIMIT = 100

/**
 * Templates: an account's own, other accounts' public ones (read-only to everyone else) and the
 * official ones Hangar ships (read-only to all). A template another account cannot read is answered
 * exactly like a missing one.
 */
export class TemplateService {
  private readonly docs: TemplateStore

  constructor(private readonly deps: { store: Store; clock: Clock; registries: RegistryService }) {
    this.docs = deps.store.templates
  }

  async create(accountId: string, body: CreateTemplate): Promise<Template> {
    await this.deps.registries.assertUsable(accountId, body.registry)
    const record: TemplateRecord = {
      id: newId('tpl_'),
      accountId,
      createdAt: iso(this.deps.clock.now()),
      name: body.name,
      image: body.image,
      ...resolveCommand(body),
      disk: body.disk ?? DEFAULT_TEMPLATE_DISK,
      env: body.env ?? {},
      ports: body.ports ?? [],
      registry: body.registry ?? null,
      mounts: body.mounts?.persistent ? { persistent: body.mounts.persistent } : {},
      serverless: body.serverless ?? false,
      public: body.public ?? false,
      category: body.category ?? 'NVIDIA',
      // Unlike pods, templates start SSH and Jupyter unless told not to.
      startSsh: body.startSsh ?? true,
      startJupyter: body.startJupyter ?? true,
      allowedCudaVersions: body.allowedCudaVersions ?? [],
    }
    await this.docs.insert(record)
    return view(record, accountId)
  }

  /** The account's own templates, oldest first. */
  async list(accountId: string): Promise<Template[]> {
    return (await this.docs.list(accountId)).map((t) => view(t, accountId))
  }

  /** A template the account may read: its own, a public one of any account, or an official one. */
  async get(accountId: string, id: string): Promise<Template> {
    return this.resolveForAccount(accountId, id)
  }

  /**
   * The template `templateId` as the account sees it, for resolving it into an endpoint or pod: own,
   * public (with `registry: null`, since another account's credential is not usable) or official.
   * Throws 404 for unknown and foreign private templates alike.
   */
  async resolveForAccount(accountId: string, templateId: string): Promise<Template> {
    const official = officialTemplate(templateId)
    if (official) return official
    const t = await this.docs.get(templateId)
    if (!t || (t.accountId !== accountId && !t.public)) throw notFound('template', templateId)
    return view(t, accountId)
  }

  /** Changes an own template; never applied to endpoints or pods created from it. Public templates of others and official ones are 404. */
  async update(accountId: string, id: string, body: UpdateTemplate): Promise<Template> {
    const t = await this.owned(accountId, id)
    if (body.registry !== undefined) await this.deps.registries.assertUsable(accountId, body.registry)
    const next: TemplateRecord = {
      ...t,
      ...resolveCommand(body, t),
      name: body.name ?? t.name,
      image: body.image ?? t.image,
      disk: body.disk ?? t.disk,
      env: body.env ?? t.env,
      ports: body.ports ?? t.ports,
      registry: body.registry !== undefined ? body.registry : t.registry,
      // `mounts: {}` leaves the mount as it is; a persistent mount replaces it.
      mounts: body.mounts?.persistent ? { persistent: body.mounts.persistent } : t.mounts,
      serverless: body.serverless ?? t.serverless,
      public: body.public ?? t.public,
      category: body.category ?? t.category,
      startSsh: body.startSsh ?? t.startSsh,
      startJupyter: body.startJupyter ?? t.startJupyter,
      allowedCudaVersions: body.allowedCudaVersions ?? t.allowedCudaVersions,
    }
    await this.docs.update(next)
    return view(next, accountId)
  }

  /**
   * Deletes an own template. Refused (400) while an endpoint of the same account is bound to it; endpoints
   * of other accounts copied a public template's settings when they were created and do not hold it.
   */
  async delete(accountId: string, id: string): Promise<void> {
    await this.owned(accountId, id)
    const { store } = this.deps
    await store.transaction(async (tx) => {
      await refuseDeleteInUse(tx, accountId, { kind: 'template', id })
      await tx.templates.delete(id)
    })
  }

  /**
   * The public catalog: `official` = shipped with Hangar; `community` = public templates of every account
   * (the newest 100); `verified` = always empty, since Hangar has no verification process.
   */
  async catalog(accountId: string, source: TemplateSource['source'] = 'official'): Promise<Template[]> {
    switch (source) {
      case 'official':
        return OFFICIAL_TEMPLATES.map((t) => structuredClone(t))
      case 'verified':
        return []
      case 'community':
        return (await this.docs.listPublic()).slice(-CATALOG_LIMIT).map((t) => view(t, accountId))
    }
  }

  private async owned(accountId: string, id: string): Promise<TemplateRecord> {
    const t = await this.docs.get(id)
    if (!t || t.accountId !== accountId) throw notFound('template', id)
    return t
  }
}

/** The response shape; another account's registry credential id is not shown to (or usable by) the reader. */
function view(t: TemplateRecord, readerAccountId: string): Template {
  const { accountId, createdAt: _c, ...template } = t
  return { ...structuredClone(template), registry: accountId === readerAccountId ? t.registry : null }
}
