import { randomBytes, randomInt } from 'node:crypto'
import type { QuotaService } from '../accounts/QuotaService.js'
import { createServer } from 'node:net'
import type { CatalogService } from '../../catalog/CatalogService.js'
import type { Allocation } from '../../catalog/Fleet.js'
import type { Cluster, CreateCluster, UpdateCluster } from '../../contract/cluster.js'
import type { Pod } from '../../contract/pod.js'
import { iso, type Clock } from '../../domain/clock.js'
import { clusterEnv, clusterRole, createClusterSpec, memberAddress } from '../../domain/pods/clusterRules.js'
import { DomainError, notFound } from '../../domain/errors.js'
import { newId } from '../../domain/ids.js'
import { newPodRecord, type PodRecord } from '../../domain/pods/pod.js'
import type { ClusterRecord } from '../../store/ClusterStore.js'
import type { Store } from '../../store/Store.js'
import type { Principal } from '../accounts/AccountService.js'
import type { NetworkVolumeService } from '../storage/NetworkVolumeService.js'
import { podCatalogView, type PodService } from './PodService.js'
import type { SshKeyService } from '../accounts/SshKeyService.js'

/** What ClusterService needs. */
export interface ClusterServiceDeps {
  store: Store
  clock: Clock
  catalog: CatalogService
  pods: Pick<PodService, 'startCreated' | 'viewOf' | 'terminate'>
  /** Account quotas: a cluster's members count as pods and GPUs (absent: none). */
  quotas?: Pick<QuotaService, 'admitPodCreate' | 'admitPods'>
  networkVolumes: Pick<NetworkVolumeService, 'get'>
  sshKeys: Pick<SshKeyService, 'keysOf'>
}

/**
 * Instant clusters: several GPU pods placed together in one data center (all or none), on a private
 * address block, each told its rank and the primary's address. Members are ordinary pods with a `cluster`
 * block, managed only through here. On the process runtime the block is a /24 of loopback (127.x.y.0/24:
 * every address in 127/8 is this machine on Linux), so members really reach each other at the addresses
 * they are given; the primary listens on a port chosen free at create.
 */
export class ClusterService {
  constructor(private readonly deps: ClusterServiceDeps) {}

  async create(p: Principal, body: CreateCluster): Promise<Cluster> {
    const { catalog, store } = this.deps
    const volumeIds = (body.mounts?.network ?? []).map((m) => m.volumeId)
    const volumes = new Map<string, { dataCenter: string }>()
    for (const id of volumeIds) {
      try {
        volumes.set(id, { dataCenter: (await this.deps.networkVolumes.get(p.accountId, id)).dataCenter })
      } catch (err) {
        if (!(err instanceof DomainError && err.kind === 'not_found')) throw err
      }
    }
    const spec = createClusterSpec(body, {
      catalog: podCatalogView(catalog),
      volumes,
      sshKeys: await this.deps.sshKeys.keysOf(p.accountId),
      newPassword: () => randomBytes(12).toString('base64url'),
    })
    const { podCount, gpuTypeId, gpuCountPerPod } = spec.compute
    const volumeDc = volumeIds.length ? volumes.get(volumeIds[0])!.dataCenter : null
    const candidates = (spec.dataCenterIds.length ? spec.dataCenterIds : catalog.dataCenters.map((d) => d.id)).filter(
      (d) => !volumeDc || d === volumeDc,
    )
    const ids = Array.from({ length: podCount }, () => newId('pod_'))
    await this.deps.quotas?.admitPodCreate(p.accountId, podCount * gpuCountPerPod, {
      pods: podCount,
      what: 'cluster create',
    })
    const placed = this.placeAll(ids, candidates, spec.member.gpu!, p.accountId)
    if ('fits' in placed) {
      const line = `compute: no data center can hold all ${podCount} pods of ${gpuCountPerPod} x ${gpuTypeId}; ${placed.fits.map((f) => `${f.dc} fits ${f.n}`).join(', ') || 'no data center is acceptable'}`
      throw new DomainError('bad_request', line, [line])
    }
    const cluster: ClusterRecord = {
      id: newId('cl_'),
      accountId: p.accountId,
      createdAt: iso(this.deps.clock.now()),
      name: spec.name,
      type: spec.type,
      compute: spec.compute,
      dataCenterId: placed.dc,
      cidr: await this.freeBlock(),
      primaryPort: 0,
    }
    const primaryAddr = memberAddress(cluster.cidr, 0)
    cluster.primaryPort = await freePort(primaryAddr)
    const members: PodRecord[] = ids.map((id, rank) => {
      const a = placed.allocations[rank]
      const ip = memberAddress(cluster.cidr, rank)
      const role = clusterRole(spec.type, rank)
      const member = {
        ...structuredClone(spec.member),
        name: `${spec.name}-${rank}`,
        env: {
          ...spec.member.env,
          ...clusterEnv({
            rank,
            nodeAddr: ip,
            primaryAddr,
            primaryPort: cluster.primaryPort,
            podCount,
            gpusPerPod: gpuCountPerPod,
          }),
        },
      }
      return newPodRecord(member, {
        id,
        accountId: p.accountId,
        createdAt: cluster.createdAt,
        placement: {
          hostId: a.hostId,
          dataCenterId: a.dataCenterId,
          gpuIndices: [...a.gpuIndices],
          cudaVersion: a.cudaVersion,
          virtual: a.virtual,
        },
        cluster: { id: cluster.id, rank, ...(role ? { role } : {}), ip },
      })
    })
    try {
      await store.transaction(async (tx) => {
        await this.deps.quotas?.admitPods(tx, p.accountId, podCount, 'cluster create')
        await tx.clusters.insert(cluster)
        for (const m of members) await tx.pods.insert(m)
      })
    } catch (err) {
      for (const id of ids) catalog.fleet.release(id)
      throw err
    }
    members.forEach((m, rank) => this.deps.pods.startCreated(m, placed.allocations[rank]))
    return this.view(cluster)
  }

  async list(p: Principal): Promise<Cluster[]> {
    return Promise.all((await this.deps.store.clusters.list(p.accountId)).map((c) => this.view(c)))
  }

  async get(p: Principal, id: string): Promise<Cluster> {
    return this.view(await this.owned(p.accountId, id))
  }

  /** GET /v2/clusters/{id}/pods: the members as full pods, by rank. */
  async members(p: Principal, id: string): Promise<Pod[]> {
    await this.owned(p.accountId, id)
    return Promise.all((await this.memberRecords(id)).map((m) => this.deps.pods.viewOf(m)))
  }

  async rename(p: Principal, id: string, body: UpdateCluster): Promise<Cluster> {
    const c = await this.owned(p.accountId, id)
    const next = { ...c, name: body.name }
    await this.deps.store.clusters.update(next)
    return this.view(next)
  }

  /** Terminates every member, then forgets the cluster. */
  async delete(p: Principal, id: string): Promise<void> {
    await this.owned(p.accountId, id)
    for (const m of await this.memberRecords(id)) await this.deps.pods.terminate(p, m.id, { cluster: true })
    await this.deps.store.clusters.delete(id)
  }

  /** Every member on one data center's hosts, or none: the first candidate that holds them all wins. */
  private placeAll(
    ids: string[],
    candidates: string[],
    gpu: NonNullable<PodRecord['gpu']>,
    accountId: string,
  ): { dc: string; allocations: Allocation[] } | { fits: Array<{ dc: string; n: number }> } {
    const { fleet } = this.deps.catalog
    const fits: Array<{ dc: string; n: number }> = []
    for (const dc of candidates) {
      const allocations: Allocation[] = []
      for (const id of ids) {
        const a = fleet.reserve(id, {
          dataCenterIds: [dc],
          gpu: { typeIds: [gpu.id], count: gpu.count, allowedCudaVersions: [], minCudaVersion: null },
          owner: { accountId, kind: 'pod' },
        })
        if ('reason' in a) break
        allocations.push(a)
      }
      if (allocations.length === ids.length) return { dc, allocations }
      for (const a of allocations) fleet.release(a.id)
      fits.push({ dc, n: allocations.length })
    }
    return { fits }
  }

  /** A /24 of loopback no live cluster uses. */
  private async freeBlock(): Promise<string> {
    const used = new Set(
      (await this.deps.store.pods.list({ includeClusterPods: true }))
        .map((m) => m.cluster?.ip?.split('.').slice(0, 3).join('.'))
        .filter(Boolean),
    )
    for (;;) {
      const block = `127.${randomInt(64, 192)}.${randomInt(0, 256)}`
      if (!used.has(block)) return `${block}.0/24`
    }
  }

  private async memberRecords(clusterId: string): Promise<PodRecord[]> {
    return (await this.deps.store.pods.list({ clusterId })).sort(
      (a, b) => (a.cluster!.rank ?? 0) - (b.cluster!.rank ?? 0),
    )
  }

  private async owned(accountId: string, id: string): Promise<ClusterRecord> {
    const c = await this.deps.store.clusters.get(id)
    if (!c || c.accountId !== accountId) throw notFound('cluster', id)
    return c
  }

  private async view(c: ClusterRecord): Promise<Cluster> {
    const members = await this.memberRecords(c.id)
    const byStatus: Record<string, number> = {}
    for (const m of members) byStatus[m.status] = (byStatus[m.status] ?? 0) + 1
    const primary = members.find((m) => m.cluster?.rank === 0)
    const ssh =
      primary?.status === 'RUNNING' && primary.ports.includes('22/tcp')
        ? primary.portMappings.find((x) => x.privatePort === 22 && x.protocol === 'tcp')
        : undefined
    return {
      id: c.id,
      name: c.name,
      type: c.type,
      compute: { ...c.compute },
      createdAt: c.createdAt,
      pods: { total: members.length, byStatus },
      dataCenterId: c.dataCenterId,
      network: { cidr: c.cidr },
      ...(primary
        ? {
            primary: {
              podId: primary.id,
              status: primary.status,
              ...(ssh ? { sshEndpoint: `${ssh.ip}:${ssh.publicPort}` } : {}),
            },
          }
        : {}),
    }
  }
}

/** A port free on `host` now (the primary binds it when it starts). */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, host, () => {
      const { port } = srv.address() as { port: number }
      srv.close(() => resolve(port))
    })
  })
}
