import type { CreateDelegation, CreateRegistry, Delegation, Registry } from '../../contract/registry.js'
import { iso, type Clock } from '../../domain/clock.js'
import { parseEcrArn } from '../../domain/endpoints/ecrArn.js'
import { DomainError, notFound } from '../../domain/errors.js'
import { newId } from '../../domain/ids.js'
import type { DelegationRecord, DelegationStore, RegistryRecord, RegistryStore } from '../../store/RegistryStore.js'
import type { Store } from '../../store/Store.js'
import { refuseDeleteInUse } from '../inUse.js'
import type { SecretBox } from '../SecretBox.js'

/** Credentials to pull a private image, for runtimes only; never sent to a client or a log. */
export interface RegistryCredentials {
  username: string
  password: string
}

/**
 * Container registry credentials and ECR delegations of an account. Credentials are write-only through
 * the API: they are sealed before they reach the store and only `credentials()` (for runtimes pulling
 * an image) opens them.
 */
export class RegistryService {
  private readonly registries: RegistryStore
  private readonly delegations: DelegationStore

  constructor(private readonly deps: { store: Store; clock: Clock; secrets: SecretBox }) {
    this.registries = deps.store.registries
    this.delegations = deps.store.delegations
  }

  async create(accountId: string, body: CreateRegistry): Promise<Registry> {
    const id = newId('reg_')
    const { secrets } = this.deps
    await this.registries.insert({
      id,
      accountId,
      createdAt: iso(this.deps.clock.now()),
      name: body.name,
      username: secrets.seal(body.username, context(id, 'username')),
      password: secrets.seal(body.password, context(id, 'password')),
    })
    return { id, name: body.name }
  }

  async list(accountId: string): Promise<Registry[]> {
    return (await this.registries.list(accountId)).map(view)
  }

  async get(accountId: string, id: string): Promise<Registry> {
    return view(await this.owned(accountId, id))
  }

  /** True when `id` is a registry credential of the account. */
  async exists(accountId: string, id: string): Promise<boolean> {
    const r = await this.registries.get(id)
    return r !== undefined && r.accountId === accountId
  }

  /**
   * Checks a body's `registry` field: null/undefined pass; an id must be a credential of the account,
   * else 400 (a reference that breaks a rule, not a missing addressed resource).
   */
  async assertUsable(accountId: string, id: string | null | undefined, path = 'registry'): Promise<void> {
    if (id === null || id === undefined || (await this.exists(accountId, id))) return
    const line = `${path}: no container registry credential ${JSON.stringify(id)} in this account`
    throw new DomainError('bad_request', line, [line])
  }

  /** The decrypted username and password, for a runtime pulling a private image. */
  async credentials(accountId: string, id: string): Promise<RegistryCredentials> {
    const r = await this.owned(accountId, id)
    const { secrets } = this.deps
    return {
      username: secrets.open(r.username, context(id, 'username')),
      password: secrets.open(r.password, context(id, 'password')),
    }
  }

  /**
   * Deletes a credential. Refused (400) while an endpoint of the account pulls with it, because its
   * workers could no longer start; templates that name it keep working without it (`registry: null`).
   */
  async delete(accountId: string, id: string): Promise<void> {
    await this.owned(accountId, id)
    const { store } = this.deps
    await store.transaction(async (tx) => {
      await refuseDeleteInUse(tx, accountId, { kind: 'registry', id })
      await tx.templates.clearRegistry(accountId, id)
      await tx.registries.delete(id)
    })
  }

  async listDelegations(accountId: string): Promise<Delegation[]> {
    return (await this.delegations.list(accountId)).map(delegationView)
  }

  /** Records delegated pull access to an ECR repository; a malformed ARN is 422 naming the bad part. */
  async createDelegation(accountId: string, body: CreateDelegation): Promise<Delegation> {
    const repo = parseEcrArn(body.resource)
    const record: DelegationRecord = {
      id: newId('dlg_'),
      accountId,
      createdAt: iso(this.deps.clock.now()),
      name: body.name ?? null,
      delegatorUserId: accountId,
      awsUser: repo.account,
      repository: repo.repository,
      tag: repo.tag,
      awsRegion: repo.region,
      dockerRegistryUri: repo.registryHost,
    }
    await this.delegations.insert(record)
    return delegationView(record)
  }

  async deleteDelegation(accountId: string, id: string): Promise<void> {
    const d = await this.delegations.get(id)
    if (!d || d.accountId !== accountId) throw notFound('delegation', id)
    await this.delegations.delete(id)
  }

  private async owned(accountId: string, id: string): Promise<RegistryRecord> {
    const r = await this.registries.get(id)
    if (!r || r.accountId !== accountId) throw notFound('container registry credential', id)
    return r
  }
}

/** Binds a sealed value to its record and field, so it cannot be moved to another one. */
function context(id: string, field: 'username' | 'password'): string {
  return `registry:${id}:${field}`
}

function view(r: RegistryRecord): Registry {
  return { id: r.id, name: r.name }
}

function delegationView(d: DelegationRecord): Delegation {
  const { accountId: _a, ...rest } = d
  return rest
}
