import { createHash } from 'node:crypto'
import type { CreateSecret, Secret, UpdateSecret } from '../../contract/secret.js'
import { iso, type Clock } from '../../domain/clock.js'
import { DomainError, notFound } from '../../domain/errors.js'
import { secretRefs, substituteSecrets, variablesReferencing } from '../../domain/secrets/secretRefs.js'
import type { SecretRecord } from '../../store/SecretStore.js'
import type { Store } from '../../store/Store.js'
import type { SecretBox } from '../SecretBox.js'

/** A workload's env names a secret its account does not have: the start cannot go on. */
export class MissingSecretError extends DomainError {
  constructor(
    readonly missing: string[],
    env: Record<string, string>,
  ) {
    super(
      'unprocessable',
      missing
        .map(
          (name) =>
            `secret ${JSON.stringify(name)} (referenced by env ${variablesReferencing(env, name).join(', ')}) does not exist in this account`,
        )
        .join('; '),
    )
  }
}

/**
 * An account's secrets: values sealed before they reach the store (context `secret:<id>`), never returned by
 * any method but `resolveEnv`, which only the runtime's start path calls. A secret is found by its id or its
 * name; its id is derived from the account and name, so two creates of one name cannot both succeed.
 */
export class SecretService {
  constructor(private readonly deps: { store: Store; clock: Clock; box: SecretBox }) {}

  async create(accountId: string, body: CreateSecret): Promise<Secret> {
    const id = secretId(accountId, body.name)
    const now = iso(this.deps.clock.now())
    const record: SecretRecord = {
      id,
      accountId,
      createdAt: now,
      name: body.name,
      description: body.description ?? '',
      value: this.deps.box.seal(body.value, context(id)),
      updatedAt: now,
      version: 1,
    }
    const taken = () => new DomainError('conflict', `a secret named ${JSON.stringify(body.name)} already exists`)
    if (await this.deps.store.secrets.get(id)) throw taken()
    try {
      await this.deps.store.secrets.insert(record)
    } catch (err) {
      // Another create of the same name won between the check and the insert: the same id.
      if (await this.deps.store.secrets.get(id)) throw taken()
      throw err
    }
    return view(record)
  }

  async list(accountId: string): Promise<Secret[]> {
    return (await this.deps.store.secrets.list(accountId)).map(view)
  }

  async get(accountId: string, ref: string): Promise<Secret> {
    return view(await this.owned(accountId, ref))
  }

  /** A new value (a rotation: workloads get it at their next start) and/or description. */
  async update(accountId: string, ref: string, body: UpdateSecret): Promise<Secret> {
    const current = await this.owned(accountId, ref)
    const next: SecretRecord = {
      ...current,
      description: body.description ?? current.description,
      value: body.value === undefined ? current.value : this.deps.box.seal(body.value, context(current.id)),
      version: body.value === undefined ? current.version : current.version + 1,
      updatedAt: iso(this.deps.clock.now()),
    }
    if (!(await this.deps.store.secrets.update(next))) throw notFound('secret', ref)
    return view(next)
  }

  /**
   * Deletes a secret. Allowed while env values reference it, as on the hosted platform: their workloads'
   * next starts fail, saying which secret is missing.
   */
  async delete(accountId: string, ref: string): Promise<void> {
    const s = await this.owned(accountId, ref)
    if (!(await this.deps.store.secrets.delete(s.id))) throw notFound('secret', ref)
  }

  /** Refuses env values that reference secrets the account lacks (checked when templates, endpoints, pods are written). */
  async checkReferences(accountId: string, env: Record<string, string>): Promise<void> {
    const missing = await this.missing(accountId, secretRefs(env))
    if (missing.length) throw new MissingSecretError(missing, env)
  }

  /**
   * `env` with each `{{ RUNPOD_SECRET_<name> }}` replaced by the account's secret of that name, opened now:
   * called only as a workload starts, so a rotation applies at the next start and no record ever holds a
   * value. Throws MissingSecretError naming each missing secret and the variables that reference it.
   */
  async resolveEnv(accountId: string, env: Record<string, string>): Promise<Record<string, string>> {
    const names = secretRefs(env)
    if (names.length === 0) return env
    const values = new Map<string, string>()
    const missing: string[] = []
    for (const name of names) {
      const s = await this.deps.store.secrets.get(secretId(accountId, name))
      // The id is derived from the account, and the owner is checked too: another account's secret never resolves.
      if (!s || s.accountId !== accountId || s.name !== name) missing.push(name)
      else values.set(name, this.deps.box.open(s.value, context(s.id)))
    }
    if (missing.length) throw new MissingSecretError(missing, env)
    return substituteSecrets(env, values)
  }

  private async missing(accountId: string, names: string[]): Promise<string[]> {
    const out: string[] = []
    for (const name of names) {
      const s = await this.deps.store.secrets.get(secretId(accountId, name))
      if (!s || s.accountId !== accountId) out.push(name)
    }
    return out
  }

  /** The account's secret by id or name; foreign and missing ones are not found alike. */
  private async owned(accountId: string, ref: string): Promise<SecretRecord> {
    const s = (await this.deps.store.secrets.get(ref)) ?? (await this.deps.store.secrets.get(secretId(accountId, ref)))
    if (!s || s.accountId !== accountId) throw notFound('secret', ref)
    return s
  }
}

/** The id of an account's secret of `name`: fixed, so a name is unique in its account on every store. */
export function secretId(accountId: string, name: string): string {
  return `sec_${createHash('sha256').update(`${accountId}\0${name}`).digest('hex').slice(0, 24)}`
}

function context(id: string): string {
  return `secret:${id}`
}

function view(s: SecretRecord): Secret {
  return {
    id: s.id,
    name: s.name,
    description: s.description,
    version: s.version,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
  }
}
