import { mkdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { CatalogService } from '../../catalog/CatalogService.js'
import type { CreateNetworkVolume, NetworkVolume, UpdateNetworkVolume } from '../../contract/networkVolume.js'
import { iso, type Clock } from '../../domain/clock.js'
import { DomainError, notFound, Violations } from '../../domain/errors.js'
import { newId } from '../../domain/ids.js'
import type { NetworkVolumeRecord, NetworkVolumeStore } from '../../store/NetworkVolumeStore.js'
import type { Store } from '../../store/Store.js'
import { refuseDeleteInUse } from '../inUse.js'
import type { VolumeMeter } from '../billing/UsageMeter.js'
import type { QuotaService } from '../accounts/QuotaService.js'

/**
 * Network volumes: a directory per volume on its data center's storage, which for this machine's
 * fleet is `<volumesDir>/<dataCenterId>/<volumeId>`. `size` is recorded and billed but not enforced
 * as a quota (a plain directory has none).
 */
export class NetworkVolumeService {
  private readonly docs: NetworkVolumeStore

  constructor(
    private readonly deps: {
      store: Store
      clock: Clock
      catalog: CatalogService
      volumesDir: string /** Bills each volume's size while it exists. */
      meter?: VolumeMeter
      /** Account quotas: GB of network volumes (absent: none). Set after construction (see main.ts). */
      quotas?: Pick<QuotaService, 'admitVolume'>
    },
  ) {
    this.docs = deps.store.networkVolumes
  }

  /**
   * Creates the volume and its directory. 400 when `dataCenter` is not in the catalog or `type` is not a
   * tier it offers; `type` defaults to the data center's first (primary) tier.
   */
  async create(accountId: string, body: CreateNetworkVolume): Promise<NetworkVolume> {
    const dc = this.deps.catalog.dataCenter(body.dataCenter)
    const v = new Violations()
    if (!dc) {
      v.add('dataCenter', `${JSON.stringify(body.dataCenter)} is not a data center in the catalog`)
    } else if (dc.networkVolumeTypes.length === 0) {
      v.add('dataCenter', `data center ${JSON.stringify(dc.id)} offers no network volumes`)
    } else if (body.type !== undefined && !dc.networkVolumeTypes.includes(body.type)) {
      v.add(
        'type',
        `${JSON.stringify(body.type)} is not offered by data center ${JSON.stringify(dc.id)}, which offers ${dc.networkVolumeTypes.join(', ')}`,
      )
    }
    v.throwIfAny('bad_request')
    const record: NetworkVolumeRecord = {
      id: newId('vol_'),
      accountId,
      createdAt: iso(this.deps.clock.now()),
      name: body.name,
      size: body.size,
      dataCenter: dc!.id,
      type: body.type ?? dc!.networkVolumeTypes[0],
    }
    const dir = this.pathOf(record)
    await mkdir(dir, { recursive: true })
    try {
      // The quota is read in the transaction that inserts: racing creates cannot all pass its last GB.
      await this.deps.store.transaction(async (tx) => {
        await this.deps.quotas?.admitVolume(tx, accountId, body.size, 'network volume create')
        await tx.networkVolumes.insert(record)
      })
    } catch (err) {
      await rm(dir, { recursive: true, force: true })
      throw err
    }
    await this.deps.meter?.volumeChanged(record)
    return view(record)
  }

  async list(accountId: string): Promise<NetworkVolume[]> {
    return (await this.docs.list(accountId)).map(view)
  }

  /** Every volume of every account, with its owner (billing resumes them at start). */
  async all(): Promise<NetworkVolumeRecord[]> {
    const accounts = await this.deps.store.accounts.list()
    return (await Promise.all(accounts.map((a) => this.docs.list(a.id)))).flat()
  }

  async get(accountId: string, id: string): Promise<NetworkVolume> {
    return view(await this.owned(accountId, id))
  }

  /** Renames and/or grows a volume; a smaller size is 400 (data may already fill it). */
  async update(accountId: string, id: string, body: UpdateNetworkVolume): Promise<NetworkVolume> {
    const current = await this.owned(accountId, id)
    if (body.size !== undefined && body.size < current.size) {
      const line = `size: ${body.size} GB is smaller than the current ${current.size} GB; network volumes can only grow`
      throw new DomainError('bad_request', line, [line])
    }
    const next: NetworkVolumeRecord = { ...current, name: body.name ?? current.name, size: body.size ?? current.size }
    await this.deps.store.transaction(async (tx) => {
      await this.deps.quotas?.admitVolume(tx, accountId, next.size - current.size, 'network volume grow')
      await tx.networkVolumes.update(next)
    })
    await this.deps.meter?.volumeChanged(next)
    return view(next)
  }

  /**
   * Deletes the volume and everything in its directory. Refused (400) while an endpoint of the account
   * lists it in `networkVolumes`, since its workers mount it.
   */
  async delete(accountId: string, id: string): Promise<void> {
    const volume = await this.owned(accountId, id)
    const { store } = this.deps
    await store.transaction(async (tx) => {
      await refuseDeleteInUse(tx, accountId, { kind: 'networkVolume', id })
      await tx.networkVolumes.delete(id)
    })
    await this.deps.meter?.volumeDeleted(id)
    // After the record is gone: a failure here leaves an orphaned directory, never a volume without one.
    await rm(this.pathOf(volume), { recursive: true, force: true })
  }

  /**
   * The account's volumes with these ids, in order. Throws 400 naming each id (as `<path>[i]`) that is not
   * a volume of the account; foreign and missing volumes read the same.
   */
  async assertOwned(accountId: string, ids: readonly string[], path = 'networkVolumes'): Promise<NetworkVolume[]> {
    const v = new Violations()
    const out: NetworkVolume[] = []
    for (const [i, id] of ids.entries()) {
      const vol = await this.docs.get(id)
      if (!vol || vol.accountId !== accountId)
        v.add(`${path}[${i}]`, `no network volume ${JSON.stringify(id)} in this account`)
      else out.push(view(vol))
    }
    v.throwIfAny('bad_request')
    return out
  }

  /** The directory holding the volume's files, for a runtime to mount. */
  pathOf(volume: Pick<NetworkVolume, 'id' | 'dataCenter'>): string {
    return join(this.deps.volumesDir, volume.dataCenter, volume.id)
  }

  private async owned(accountId: string, id: string): Promise<NetworkVolumeRecord> {
    const vol = await this.docs.get(id)
    if (!vol || vol.accountId !== accountId) throw notFound('network volume', id)
    return vol
  }
}

function view(v: NetworkVolumeRecord): NetworkVolume {
  return { id: v.id, name: v.name, size: v.size, dataCenter: v.dataCenter, type: v.type }
}
