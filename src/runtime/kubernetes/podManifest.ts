import { createHash } from 'node:crypto'
import type { V1Pod, V1Volume, V1VolumeMount } from '@kubernetes/client-node'
import type { PublishedPort, WorkloadSpec } from '../RuntimeDriver.js'
import type { KubernetesConfig } from './KubernetesConfig.js'
import { MANAGED_BY } from './PodWatch.js'

/** Annotation with every label of the workload as JSON: label values may not hold URLs or JSON, annotations may. */
export const LABELS_ANNOTATION = 'hangar.io/labels'
/** Annotation with the ports as published (JSON of PublishedPort[] without `ip`, which the Pod's status gives). */
export const PORTS_ANNOTATION = 'hangar.io/ports'
/** Label with the Pod's own name: the selector of its NodePort Service. */
export const POD_NAME_LABEL = 'hangar.io/pod-name'
/** The one container of a workload's Pod. */
export const CONTAINER = 'main'

const LABEL_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$/
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/

/** Whether a key/value pair can be a Kubernetes label (the rest are kept in the labels annotation only). */
export function isLabel(key: string, value: string): boolean {
  const slash = key.lastIndexOf('/')
  const name = slash >= 0 ? key.slice(slash + 1) : key
  const prefix = slash >= 0 ? key.slice(0, slash) : ''
  return (
    LABEL_NAME.test(name) &&
    (prefix === '' || /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(prefix)) &&
    LABEL_VALUE.test(value)
  )
}

/** A DNS-1123 name from free text: lowercase, `-` for anything else, at most `max` characters. */
export function dnsName(text: string, max = 63): string {
  const s = text
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')
  return s.slice(0, max).replace(/-+$/, '') || 'x'
}

/** Name of the claim of a pod's persistent volume. */
export function persistentClaim(name: string): string {
  return `hangar-persistent-${dnsName(name, 40)}-${shortHash(name)}`
}

/** Name of the claim of a network volume, from its directory (the last path segment is the volume id). */
export function volumeClaim(source: string): string {
  const id = source.replace(/\/+$/, '').split('/').pop() ?? source
  return `hangar-volume-${dnsName(id, 40)}-${shortHash(source)}`
}

export function shortHash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 8)
}

/** Quantity of a number of CPUs (`0.5` -> `500m`). */
export function cpuQuantity(vcpus: number): string {
  return `${Math.max(1, Math.round(vcpus * 1000))}m`
}

/** Quantity of gigabytes, as mebibytes (whole numbers only). */
export function memoryQuantity(gb: number): string {
  return `${Math.max(1, Math.round(gb * 1024))}Mi`
}

export interface PodManifestInput {
  spec: WorkloadSpec
  name: string
  config: KubernetesConfig
  /** Labels the Pod is scheduled by (the GPU type label of its fleet host), if any. */
  nodeSelector: Record<string, string> | null
  /** Ports the program listens on (the chosen node ports with host networking). */
  ports: Omit<PublishedPort, 'ip'>[]
  /** Env the driver adds: ports and mount paths. */
  runtimeEnv: Record<string, string>
  pullSecret: string | null
  /** A headless Service the Pod is a member of (clusters): its hostname and subdomain. */
  dns?: { hostname: string; subdomain: string }
}

/**
 * The Pod of a workload: one container `main` with the spec's image, command and env, its resources
 * (requests = limits / oversubscription, GPUs as the extended resource), the container disk as an emptyDir
 * with a size limit, persistent and network volumes as claims (or the volume's host directory), and the
 * labels Hangar finds it by again. Never restarted by Kubernetes: Hangar decides what runs.
 */
export function podManifest(i: PodManifestInput): V1Pod {
  const { spec, config } = i
  const all = { ...spec.labels }
  const labels: Record<string, string> = { ...MANAGED_BY, [POD_NAME_LABEL]: i.name }
  for (const [k, v] of Object.entries(all)) if (isLabel(k, v)) labels[k] = v
  const volumes: V1Volume[] = []
  const mounts: V1VolumeMount[] = []
  const taken = new Set(spec.mounts.filter((m) => m.kind !== 'disk').map((m) => m.target))
  for (const [n, m] of spec.mounts.entries()) {
    const vname = `m${n}`
    if (m.kind === 'disk') {
      if (taken.has(m.target)) continue
      volumes.push({ name: vname, emptyDir: m.sizeGb > 0 ? { sizeLimit: `${m.sizeGb}Gi` } : {} })
    } else if (m.kind === 'persistent') {
      volumes.push({ name: vname, persistentVolumeClaim: { claimName: persistentClaim(m.name) } })
    } else if (config.networkVolumes === 'hostPath') {
      volumes.push({ name: vname, hostPath: { path: m.source, type: 'DirectoryOrCreate' } })
    } else {
      volumes.push({ name: vname, persistentVolumeClaim: { claimName: volumeClaim(m.source) } })
    }
    mounts.push({ name: vname, mountPath: m.target })
  }
  const limits: Record<string, string> = {}
  const requests: Record<string, string> = {}
  if (spec.resources.vcpus > 0) {
    limits.cpu = cpuQuantity(spec.resources.vcpus)
    requests.cpu = cpuQuantity(spec.resources.vcpus / config.oversubscription)
  }
  if (spec.resources.memoryGb > 0) {
    limits.memory = memoryQuantity(spec.resources.memoryGb)
    requests.memory = memoryQuantity(spec.resources.memoryGb / config.oversubscription)
  }
  // Virtual GPUs (no device) ask for none; a real allocation asks Kubernetes for as many devices.
  if (!spec.gpus.virtual && spec.gpus.ids.length > 0) {
    limits[config.gpuResource] = String(spec.gpus.ids.length)
    requests[config.gpuResource] = String(spec.gpus.ids.length)
  }
  const env = { ...spec.env, ...i.runtimeEnv }
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: i.name,
      labels,
      annotations: { [LABELS_ANNOTATION]: JSON.stringify(all), [PORTS_ANNOTATION]: JSON.stringify(i.ports) },
    },
    spec: {
      restartPolicy: 'Never',
      // Stop = delete with the grace period of that call; this is the default for deletes without one.
      terminationGracePeriodSeconds: 30,
      hostNetwork: config.hostNetwork || undefined,
      dnsPolicy: config.hostNetwork ? 'ClusterFirstWithHostNet' : undefined,
      hostname: i.dns?.hostname,
      subdomain: i.dns?.subdomain,
      enableServiceLinks: false,
      automountServiceAccountToken: false,
      nodeSelector: i.nodeSelector ?? undefined,
      imagePullSecrets: i.pullSecret ? [{ name: i.pullSecret }] : undefined,
      volumes,
      containers: [
        {
          name: CONTAINER,
          image: spec.image,
          imagePullPolicy: config.imagePullPolicy,
          command: spec.entrypoint.length > 0 ? spec.entrypoint : undefined,
          args: spec.cmd.length > 0 ? spec.cmd : undefined,
          env: Object.entries(env).map(([name, value]) => ({ name, value })),
          ports: config.hostNetwork
            ? i.ports.map((p) => ({ containerPort: p.publicPort, hostPort: p.publicPort, protocol: 'TCP' }))
            : i.ports.map((p) => ({ containerPort: p.privatePort, protocol: 'TCP' })),
          resources: Object.keys(limits).length > 0 ? { limits, requests } : undefined,
          volumeMounts: mounts,
        },
      ],
    },
  }
}
