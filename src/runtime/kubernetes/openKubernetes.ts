import { CoreV1Api } from '@kubernetes/client-node'
import type { Host } from '../../catalog/Fleet.js'
import type { Log } from '../../services/log.js'
import { clusterHosts, refreshClusterHosts } from './clusterHosts.js'
import { kubeConfigOf, kubeMessageOf } from './kubeClient.js'
import type { KubernetesConfig } from './KubernetesConfig.js'
import { checkPermissions } from './permissions.js'
import { KubernetesDriver } from './KubernetesDriver.js'

/** A cluster Hangar runs on: its driver, the fleet hosts it stands for, and how to bring them in step. */
export interface KubernetesRuntime {
  driver: KubernetesDriver
  hosts: Host[]
  /** Reads Nodes and Pods again (capacity others took or gave back); the hosts are updated in place. */
  refresh(): Promise<void>
  close(): Promise<void>
}

/** Connects to the cluster of `runtime.kubernetes` and reads its Nodes; rejects saying which cluster did not answer. */
export async function openKubernetes(
  c: KubernetesConfig,
  dataDir: string,
  dataCenterId: string,
  /** Where the driver reports what it recovers from (the watch of its Pods); stderr when not given. */
  log?: Log,
): Promise<KubernetesRuntime> {
  const kc = kubeConfigOf(c)
  const api = kc.makeApiClient(CoreV1Api)
  // A Role short of a rule is a start-up error naming the verb and resource, not workers that never start.
  await checkPermissions(kc, c.namespace, (m) => (log ? log.warn({ namespace: c.namespace }, m) : console.warn(m)))
  let found
  try {
    found = await clusterHosts(api, c, dataCenterId)
  } catch (err) {
    throw new Error(
      `runtime.kubernetes: cannot read the Nodes of ${kc.getCurrentCluster()?.server}: ${kubeMessageOf(err)}`,
    )
  }
  const driver = new KubernetesDriver({ config: c, dataDir, hostSelectors: found.selectors, kubeConfig: kc, log })
  const hosts = found.hosts
  return { driver, hosts, refresh: () => refreshClusterHosts(api, c, dataCenterId, hosts), close: () => driver.close() }
}
