/**
 * Removes what a killed fleet run left on the cluster: every virtual Node (any run), its Pods and Leases.
 * `npx tsx bench/fleet/removeVirtualNodes.ts` with HANGAR_TEST_KUBECONFIG (or the cluster CI caches in
 * /var/cache/hangar-k8s) and HANGAR_TEST_K8S_NAMESPACE (default `default`).
 */
import { KubeConfig } from '@kubernetes/client-node'
import { VirtualNodes } from './VirtualNodes.js'

const kc = new KubeConfig()
kc.loadFromFile(process.env.HANGAR_TEST_KUBECONFIG ?? '/var/cache/hangar-k8s/pki/admin.kubeconfig')
await VirtualNodes.removeAll(kc, process.env.HANGAR_TEST_K8S_NAMESPACE ?? 'default')
