import { AuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node'
import { kubeMessageOf } from './kubeClient.js'

/** One thing Hangar does in the cluster: a verb on a resource (and subresource), in its namespace or cluster-wide. */
export interface Permission {
  verb: string
  resource: string
  subresource?: string
  /** Cluster-wide (Nodes, and the Pods of every namespace read for the capacity others take). */
  cluster?: boolean
  /** What Hangar needs it for, said when it is missing. */
  why: string
}

/**
 * Every API call the Kubernetes runtime makes, as RBAC sees it. deploy/kubernetes/base/rbac.yaml grants exactly these
 * (test/kubernetes.manifest.test.ts compares the two): a call added to the runtime is added here and there.
 */
export const REQUIRED_PERMISSIONS: readonly Permission[] = [
  { verb: 'create', resource: 'pods', why: 'start workers and pods' },
  { verb: 'get', resource: 'pods', why: 'read the state of a Pod it started' },
  { verb: 'list', resource: 'pods', why: 'adopt its Pods after a restart' },
  { verb: 'watch', resource: 'pods', why: 'follow the state of its Pods' },
  { verb: 'delete', resource: 'pods', why: 'stop workers and pods' },
  { verb: 'get', resource: 'pods', subresource: 'log', why: 'read the output of workers and pods' },
  { verb: 'create', resource: 'secrets', why: 'pull Secrets of registry logins' },
  { verb: 'update', resource: 'secrets', why: 'keep pull Secrets in step with changed passwords' },
  { verb: 'get', resource: 'persistentvolumeclaims', why: 'find the claim of a network or persistent volume' },
  { verb: 'create', resource: 'persistentvolumeclaims', why: 'claim network and persistent volumes' },
  { verb: 'delete', resource: 'persistentvolumeclaims', why: "delete a terminated pod's persistent volume" },
  { verb: 'create', resource: 'services', why: 'expose ports (NodePort traffic, cluster members)' },
  { verb: 'delete', resource: 'services', why: 'remove those Services again' },
  { verb: 'list', resource: 'nodes', cluster: true, why: 'read the fleet: Nodes, their GPUs and capacity' },
  { verb: 'get', resource: 'nodes', subresource: 'proxy', cluster: true, why: "read the kubelets' CPU/memory stats" },
  { verb: 'list', resource: 'pods', cluster: true, why: 'subtract what Pods of others request from the capacity' },
]

/** `create pods/log in namespace hangar` / `list nodes (cluster-wide)`: how RBAC and kubectl name a permission. */
export function describePermission(p: Permission, namespace: string): string {
  const what = p.subresource ? `${p.resource}/${p.subresource}` : p.resource
  return `${p.verb} ${what} ${p.cluster ? '(cluster-wide)' : `in namespace ${namespace}`}`
}

/**
 * Asks the API server, one SelfSubjectAccessReview per permission (a request every authenticated client may
 * make), which of REQUIRED_PERMISSIONS this client lacks; resolves to those, empty when it has them all.
 */
export async function missingPermissions(
  kc: KubeConfig,
  namespace: string,
  required: readonly Permission[] = REQUIRED_PERMISSIONS,
): Promise<Permission[]> {
  const api = kc.makeApiClient(AuthorizationV1Api)
  const answers = await Promise.all(
    required.map(async (p) => {
      const review = await api.createSelfSubjectAccessReview({
        body: {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SelfSubjectAccessReview',
          spec: {
            resourceAttributes: {
              verb: p.verb,
              resource: p.resource,
              subresource: p.subresource,
              namespace: p.cluster ? undefined : namespace,
            },
          },
        },
      })
      return review.status?.allowed === true
    }),
  )
  return required.filter((_, i) => !answers[i])
}

/**
 * Refuses to start on a cluster where this client may not do all Hangar does, naming each missing verb and
 * resource (and what it is for), so a Role short of a rule is a start-up error rather than workers that never
 * start. A cluster that cannot answer the reviews is not refused here: the calls themselves will say.
 */
export async function checkPermissions(
  kc: KubeConfig,
  namespace: string,
  warn: (message: string) => void,
): Promise<void> {
  let missing: Permission[]
  try {
    missing = await missingPermissions(kc, namespace)
  } catch (err) {
    warn(`runtime.kubernetes: could not review this client's permissions (${kubeMessageOf(err)}); going on without`)
    return
  }
  if (missing.length === 0) return
  const who = kc.getCurrentUser()?.name === 'inClusterUser' ? "this Pod's ServiceAccount" : 'this client'
  throw new Error(
    `runtime.kubernetes: ${who} may not ${missing
      .map((p) => `${describePermission(p, namespace)} (to ${p.why})`)
      .join('; ')}: grant them in its Role/ClusterRole (deploy/kubernetes/base/rbac.yaml has every rule Hangar needs)`,
  )
}
