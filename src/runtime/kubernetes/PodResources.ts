import type { CoreV1Api } from '@kubernetes/client-node'
import type { PublishedPort, WorkloadSpec } from '../RuntimeDriver.js'
import { kubeStatusOf } from './kubeClient.js'
import { MANAGED_BY } from './PodWatch.js'
import { dnsName, POD_NAME_LABEL, shortHash } from './podManifest.js'

/** Options of {@link PodResources}. */
export interface PodResourcesOptions {
  api: CoreV1Api
  namespace: string
  /** Storage class of new claims; the cluster's default when unset. */
  storageClass?: string
  /** Between two reads of a claim being created or deleted, ms. */
  pollMs?: number
  /** How long a claim may take to go (or to finish going before it is made again), ms. */
  claimTimeoutMs?: number
}

/** Label of cluster members: the selector of their headless Service. */
export const CLUSTER_LABEL = 'hangar.io/cluster'

/**
 * The objects a Pod needs beside itself: PersistentVolumeClaims (a pod's persistent volume, network volumes),
 * registry pull Secrets and Services (a NodePort Service per Pod, a headless one per cluster). Every method
 * fails loudly with the API server's error or a message naming the object; callers decide what to log.
 */
export class PodResources {
  private readonly ns: string
  private readonly pollMs: number
  private readonly claimTimeoutMs: number

  constructor(private readonly o: PodResourcesOptions) {
    this.ns = o.namespace
    this.pollMs = o.pollMs ?? 250
    this.claimTimeoutMs = o.claimTimeoutMs ?? 60_000
  }

  /** A `kubernetes.io/dockerconfigjson` Secret per registry and user, created or brought in step; returns its name. */
  async ensurePullSecret(auth: NonNullable<WorkloadSpec['pullAuth']>): Promise<string> {
    const name = `hangar-registry-${dnsName(auth.server, 30)}-${shortHash(`${auth.server}\0${auth.username}`)}`
    const config = {
      auths: {
        [auth.server]: {
          username: auth.username,
          password: auth.password,
          auth: Buffer.from(`${auth.username}:${auth.password}`).toString('base64'),
        },
      },
    }
    const body = {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/dockerconfigjson',
      metadata: { name, labels: { ...MANAGED_BY, 'hangar.io/registry': 'true' } },
      data: { '.dockerconfigjson': Buffer.from(JSON.stringify(config)).toString('base64') },
    }
    try {
      await this.o.api.replaceNamespacedSecret({ name, namespace: this.ns, body })
    } catch (err) {
      if (kubeStatusOf(err) !== 404) throw err
      await this.o.api.createNamespacedSecret({ namespace: this.ns, body })
    }
    return name
  }

  /** Creates a claim unless it exists; one still being deleted (an earlier `deleteClaim`) is waited for first. */
  async ensureClaim(
    name: string,
    o: { mode: 'ReadWriteOnce' | 'ReadWriteMany'; sizeGb: number; annotations: Record<string, string> },
  ): Promise<void> {
    const until = Date.now() + this.claimTimeoutMs
    do {
      const existing = await this.readClaim(name)
      if (existing && !existing.metadata?.deletionTimestamp) return
      if (!existing) {
        try {
          await this.o.api.createNamespacedPersistentVolumeClaim({
            namespace: this.ns,
            body: {
              apiVersion: 'v1',
              kind: 'PersistentVolumeClaim',
              metadata: { name, labels: { ...MANAGED_BY }, annotations: o.annotations },
              spec: {
                accessModes: [o.mode],
                storageClassName: this.o.storageClass,
                resources: { requests: { storage: `${Math.max(1, o.sizeGb)}Gi` } },
              },
            },
          })
          return
        } catch (err) {
          // Created meanwhile by another start, or still there being deleted: read it again.
          if (kubeStatusOf(err) !== 409) throw err
        }
      }
      await new Promise((r) => setTimeout(r, this.pollMs))
    } while (Date.now() < until)
    throw new Error(
      `PersistentVolumeClaim ${this.ns}/${name} is still being deleted after ${duration(this.claimTimeoutMs)}`,
    )
  }

  /**
   * Deletes a claim and waits until it is gone (its Pods must be gone first: they are removed before); a claim
   * that does not exist is gone. Rejects when the API server refuses or the claim outlives the wait (a finalizer
   * held by a Pod still using it, a storage driver that does not release it).
   */
  async deleteClaim(name: string): Promise<void> {
    try {
      await this.o.api.deleteNamespacedPersistentVolumeClaim({ name, namespace: this.ns })
    } catch (err) {
      if (kubeStatusOf(err) === 404) return
      throw err
    }
    const until = Date.now() + this.claimTimeoutMs
    let existing = await this.readClaim(name)
    while (existing && Date.now() < until) {
      await new Promise((r) => setTimeout(r, this.pollMs))
      existing = await this.readClaim(name)
    }
    if (!existing) return
    const finalizers = existing.metadata?.finalizers ?? []
    throw new Error(
      `PersistentVolumeClaim ${this.ns}/${name} is still there ${duration(this.claimTimeoutMs)} after its deletion` +
        (finalizers.length > 0 ? ` (finalizers: ${finalizers.join(', ')})` : ''),
    )
  }

  /**
   * A NodePort Service for one Pod (`traffic: nodePort`): the control plane reaches it at its node's address.
   * Returns the ports with the node ports the API server chose.
   */
  async createNodePortService(name: string, ports: Omit<PublishedPort, 'ip'>[]): Promise<Omit<PublishedPort, 'ip'>[]> {
    const svc = await this.o.api.createNamespacedService({
      namespace: this.ns,
      body: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name, labels: { ...MANAGED_BY } },
        spec: {
          type: 'NodePort',
          selector: { [POD_NAME_LABEL]: name },
          ports: ports.map((p) => ({
            name: `p${p.privatePort}`,
            port: p.privatePort,
            targetPort: p.privatePort,
            protocol: 'TCP',
          })),
        },
      },
    })
    return ports.map((p) => ({
      ...p,
      publicPort: svc.spec?.ports?.find((x) => x.port === p.privatePort)?.nodePort ?? p.publicPort,
    }))
  }

  /** Deletes a Pod's Service, if it has one. */
  async deleteService(name: string): Promise<void> {
    try {
      await this.o.api.deleteNamespacedService({ name, namespace: this.ns })
    } catch (err) {
      if (kubeStatusOf(err) !== 404) throw err
    }
  }

  /**
   * The headless Service of a cluster (created with its first member): it gives each member the DNS name
   * `<hostname>.<service>.<namespace>.svc.cluster.local`. Returns the Service's name, the members' subdomain.
   */
  async ensureClusterService(clusterId: string): Promise<string> {
    const service = `hangar-cluster-${dnsName(clusterId, 40)}`
    try {
      await this.o.api.createNamespacedService({
        namespace: this.ns,
        body: {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: service, labels: { ...MANAGED_BY } },
          spec: { clusterIP: 'None', publishNotReadyAddresses: true, selector: { [CLUSTER_LABEL]: service } },
        },
      })
    } catch (err) {
      // Its other members made it already.
      if (kubeStatusOf(err) !== 409) throw err
    }
    return service
  }

  private async readClaim(name: string) {
    try {
      return await this.o.api.readNamespacedPersistentVolumeClaim({ name, namespace: this.ns })
    } catch (err) {
      if (kubeStatusOf(err) === 404) return null
      throw err
    }
  }
}

function duration(ms: number): string {
  return ms < 10_000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`
}
