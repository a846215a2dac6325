/**
 * Labels Hangar puts on every workload, so a restarted control plane finds what it started: its own
 * installation's workloads only, and which endpoint/pod and release each one runs.
 */
export const LABELS = {
  /** Id of the Hangar installation (one per data directory). */
  installation: 'io.hangar.installation',
  /** `worker` or `pod`. */
  kind: 'io.hangar.kind',
  /** Worker id or pod id. */
  id: 'io.hangar.id',
  /** Fleet host the workload was placed on (engines may be shared by several configured hosts). */
  host: 'io.hangar.host',
  /** Ports the runtime chose (host networking), JSON. */
  ports: 'io.hangar.ports',
  endpoint: 'io.hangar.endpoint',
  pod: 'io.hangar.pod',
  account: 'io.hangar.account',
  /** Cluster a pod is a member of, and its rank (Kubernetes names members by them). */
  cluster: 'io.hangar.cluster',
  clusterRank: 'io.hangar.cluster-rank',
  /** Release version of the endpoint the worker runs. */
  release: 'io.hangar.release',
  /** The fleet capacity it holds (JSON of an Allocation), taken again when it is adopted. */
  allocation: 'io.hangar.allocation',
  /** Control-plane URL the workload was told to call: one that changed cannot be adopted. */
  controlPlane: 'io.hangar.control-plane',
} as const
