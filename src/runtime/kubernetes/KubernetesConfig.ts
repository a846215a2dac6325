import { Type, type Static } from 'typebox'

export const KubernetesConfig = Type.Object(
  {
    kubeconfig: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'Path of a kubeconfig file; the default kubeconfig (`$KUBECONFIG`, `~/.kube/config`) when neither this nor `inCluster` is set.',
      }),
    ),
    inCluster: Type.Boolean({
      default: false,
      description: 'Use the ServiceAccount of the Pod Hangar runs in (in-cluster deployment).',
    }),
    context: Type.Optional(
      Type.String({ minLength: 1, description: 'Context of the kubeconfig; its current one when unset.' }),
    ),
    namespace: Type.String({
      minLength: 1,
      pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
      default: 'default',
      description: 'Namespace of every Pod, Secret, PersistentVolumeClaim and Service Hangar makes.',
    }),
    gpuLabel: Type.String({
      minLength: 1,
      default: 'nvidia.com/gpu.product',
      description: "Node label holding the GPU model; NVIDIA's GPU feature discovery sets `nvidia.com/gpu.product`.",
    }),
    gpuResource: Type.String({
      minLength: 1,
      default: 'nvidia.com/gpu',
      description: "Extended resource of a GPU (NVIDIA's device plugin: `nvidia.com/gpu`).",
    }),
    gpuTypes: Type.Record(Type.String(), Type.String(), {
      default: {},
      description:
        'GPU label value -> catalog GPU type id (`{"NVIDIA-A100-SXM4-80GB": "NVIDIA A100-SXM4-80GB"}`); unmapped values are the type id.',
    }),
    storageClass: Type.Optional(
      Type.String({
        minLength: 1,
        description:
          'Storage class of the PersistentVolumeClaims (network volumes ReadWriteMany, pod volumes ReadWriteOnce); the cluster default when unset.',
      }),
    ),
    networkVolumeAccessMode: Type.Enum(['ReadWriteMany', 'ReadWriteOnce'], {
      default: 'ReadWriteMany',
      description:
        "Access mode of a network volume's claim: `ReadWriteMany` (workers on any node share it; the storage class must support it, e.g. NFS or CephFS) or `ReadWriteOnce` (Pods on one node share it, e.g. hostPath).",
    }),
    networkVolumeSizeGb: Type.Integer({
      minimum: 1,
      default: 10,
      description: "Size asked for a network volume's claim, GB.",
    }),
    networkVolumes: Type.Enum(['pvc', 'hostPath'], {
      default: 'pvc',
      description:
        "`pvc`: a network volume is a ReadWriteMany PersistentVolumeClaim per volume. `hostPath`: the volume's directory on the node (single-node clusters whose node is the control plane's machine).",
    }),
    hostNetwork: Type.Boolean({
      default: false,
      description:
        "Pods share their node's network (clusters without a pod network); each declared port is then a free port of the node.",
    }),
    traffic: Type.Enum(['podIp', 'nodePort'], {
      default: 'podIp',
      description:
        "How load-balancer traffic and the pod proxy reach a Pod: `podIp` (the control plane runs in the cluster network) or `nodePort` (a NodePort Service per Pod, reached at its node's address).",
    }),
    imagePullPolicy: Type.Enum(['IfNotPresent', 'Always', 'Never'], {
      default: 'IfNotPresent',
      description: "The Pods' `imagePullPolicy`.",
    }),
    dataCenterId: Type.Optional(
      Type.String({
        minLength: 1,
        description: "Data center the cluster's hosts belong to; `fleet.localDataCenterId` when unset.",
      }),
    ),
    oversubscription: Type.Number({
      minimum: 1,
      default: 1,
      description: 'vCPUs and memory offered per unit a Node can allocate; Pods request their limits divided by this.',
    }),
    scheduleTimeoutMs: Type.Integer({
      minimum: 1_000,
      default: 300_000,
      description: 'How long a Pod may stay unschedulable before its start fails with NO_CAPACITY, ms.',
    }),
    watchStallMs: Type.Integer({
      minimum: 10_000,
      default: 300_000,
      description:
        "How long the watch of Hangar's Pods may go without an event or bookmark before it is taken as stalled (a connection that died without closing) and started again from a fresh list, ms.",
    }),
    capacityRefreshMs: Type.Integer({
      minimum: 1_000,
      default: 30_000,
      description: "How often the fleet's stock is read again from the Nodes and other Pods, ms.",
    }),
    controlPlaneUrl: Type.Optional(
      Type.String({
        pattern: '^https?://',
        description: "Base URL Pods reach the control plane at; the control plane's worker URL when unset.",
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      "A Kubernetes cluster Hangar runs its workers and pods on, each as a Pod. The cluster's Nodes become the fleet (one host per GPU type label value) and Kubernetes places each Pod (see docs/kubernetes.md).",
  },
)
export type KubernetesConfig = Static<typeof KubernetesConfig>

/** Where workloads run besides local processes and the fleet hosts' engines. */
export const RuntimeConfig = Type.Object(
  { kubernetes: Type.Optional(KubernetesConfig) },
  { additionalProperties: false },
)
export type RuntimeConfig = Static<typeof RuntimeConfig>
