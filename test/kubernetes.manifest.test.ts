import { readFileSync } from 'node:fs'
import { loadAllYaml } from '@kubernetes/client-node'
import { describe, expect, it } from 'vitest'
import { parseConfig } from '../src/config.js'
import { bytes, clusterHostId, cpu } from '../src/runtime/kubernetes/clusterHosts.js'
import { describePermission, REQUIRED_PERMISSIONS } from '../src/runtime/kubernetes/permissions.js'
import { isLabel, LABELS_ANNOTATION, podManifest, volumeClaim } from '../src/runtime/kubernetes/podManifest.js'
import type { WorkloadSpec } from '../src/runtime/RuntimeDriver.js'

/** The Pod a workload becomes, without a cluster (the tests on a real one are kubernetes.e2e and runtime.kubernetes). */
describe('the Pod of a workload', () => {
  const config = parseConfig({
    runtime: { kubernetes: { namespace: 'hangar', oversubscription: 2, storageClass: 'nfs' } },
  }).runtime!.kubernetes!
  const spec: WorkloadSpec = {
    id: 'wABC',
    kind: 'worker',
    hostId: 'k8s-nvidia-l4',
    labels: {
      'io.hangar.endpoint': 'ep1',
      'io.hangar.control-plane': 'http://hangar:8080',
      'io.hangar.allocation': '{"id":"x"}',
    },
    image: 'ghcr.io/acme/worker:1',
    entrypoint: ['python', '-u'],
    cmd: ['handler.py'],
    env: { A: '1' },
    gpus: { ids: ['0', '1'], virtual: false },
    resources: { vcpus: 4, memoryGb: 16 },
    mounts: [
      { kind: 'disk', target: '/workspace', sizeGb: 20 },
      { kind: 'volume', source: '/data/volumes/LOCAL-1/vol_AB12', target: '/runpod-volume' },
    ],
    ports: [{ port: 8000, protocol: 'http' }],
  }
  const pod = podManifest({
    spec,
    name: 'hangar-worker-wabc-1a2b3c',
    config,
    nodeSelector: { 'nvidia.com/gpu.product': 'NVIDIA-L4' },
    ports: [{ privatePort: 8000, publicPort: 8000, protocol: 'http' }],
    runtimeEnv: { HANGAR_PORT_8000: '8000' },
    pullSecret: 'hangar-registry-ghcr',
  })

  it('carries the labels a label can hold, and all of them in the annotation', () => {
    expect(pod.metadata?.labels).toEqual({
      'app.kubernetes.io/managed-by': 'hangar',
      'hangar.io/pod-name': 'hangar-worker-wabc-1a2b3c',
      'io.hangar.endpoint': 'ep1',
    })
    expect(JSON.parse(pod.metadata!.annotations![LABELS_ANNOTATION])).toEqual(spec.labels)
    expect(isLabel('io.hangar.control-plane', 'http://hangar:8080')).toBe(false)
  })

  it('asks for the GPUs, the flavor (requests = limits / oversubscription), the node of its GPU type and the pull Secret', () => {
    const c = pod.spec!.containers[0]
    expect(c.resources).toEqual({
      limits: { cpu: '4000m', memory: '16384Mi', 'nvidia.com/gpu': '2' },
      requests: { cpu: '2000m', memory: '8192Mi', 'nvidia.com/gpu': '2' },
    })
    expect(pod.spec!.nodeSelector).toEqual({ 'nvidia.com/gpu.product': 'NVIDIA-L4' })
    expect(pod.spec!.imagePullSecrets).toEqual([{ name: 'hangar-registry-ghcr' }])
    expect(pod.spec!.restartPolicy).toBe('Never')
    expect(c).toMatchObject({
      image: 'ghcr.io/acme/worker:1',
      command: ['python', '-u'],
      args: ['handler.py'],
      ports: [{ containerPort: 8000, protocol: 'TCP' }],
    })
    expect(c.env).toEqual([
      { name: 'A', value: '1' },
      { name: 'HANGAR_PORT_8000', value: '8000' },
    ])
  })

  it('mounts the container disk as a sized emptyDir and the network volume as its claim', () => {
    expect(pod.spec!.volumes).toEqual([
      { name: 'm0', emptyDir: { sizeLimit: '20Gi' } },
      { name: 'm1', persistentVolumeClaim: { claimName: volumeClaim('/data/volumes/LOCAL-1/vol_AB12') } },
    ])
    expect(volumeClaim('/data/volumes/LOCAL-1/vol_AB12')).toMatch(/^hangar-volume-vol-ab12-[0-9a-f]{8}$/)
    expect(pod.spec!.containers[0].volumeMounts).toEqual([
      { name: 'm0', mountPath: '/workspace' },
      { name: 'm1', mountPath: '/runpod-volume' },
    ])
  })

  it('reads quantities and names hosts by GPU label', () => {
    expect([cpu('2'), cpu('500m'), cpu(undefined)]).toEqual([2, 0.5, 0])
    expect([bytes('24581684Ki'), bytes('4Gi'), bytes('1e9'), bytes('128974848')]).toEqual([
      24581684 * 1024,
      4 * 1024 ** 3,
      1e9,
      128974848,
    ])
    expect([clusterHostId(null), clusterHostId('NVIDIA-A100-SXM4-80GB')]).toEqual(['k8s', 'k8s-nvidia-a100-sxm4-80gb'])
  })
})

/** deploy/kubernetes/base, read as kubectl reads it (the end-to-end test, kubernetes.deploy, applies it). */
describe('the manifests of deploy/kubernetes', () => {
  const docs = (file: string): any[] =>
    loadAllYaml(readFileSync(new URL(`../deploy/kubernetes/base/${file}`, import.meta.url), 'utf8'))
  const rbac = docs('rbac.yaml')
  const hangar = docs('hangar.yaml')
  const granted = (kind: string): string[] =>
    rbac
      .filter((d) => d.kind === kind)
      .flatMap((d) => d.rules as Array<{ resources: string[]; verbs: string[] }>)
      .flatMap((r) => r.resources.flatMap((res) => r.verbs.map((v) => `${v} ${res}`)))
      .sort()

  it('grant exactly what the Kubernetes runtime calls, in its namespace and cluster-wide', () => {
    const need = (cluster: boolean) =>
      REQUIRED_PERMISSIONS.filter((p) => !!p.cluster === cluster)
        .map((p) => `${p.verb} ${p.subresource ? `${p.resource}/${p.subresource}` : p.resource}`)
        .sort()
    expect(granted('Role')).toEqual(need(false))
    expect(granted('ClusterRole')).toEqual(need(true))
    expect(describePermission(REQUIRED_PERMISSIONS[5], 'hangar')).toBe('get pods/log in namespace hangar')
  })

  it('run two replicas as a non-root user, with probes on /readyz and /livez, requests and a disruption budget', () => {
    const deployment = hangar.find((d) => d.kind === 'Deployment')
    const pod = deployment.spec.template.spec
    const c = pod.containers[0]
    expect(deployment.spec.replicas).toBe(2)
    expect(pod.serviceAccountName).toBe('hangar')
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001 })
    expect(c.readinessProbe.httpGet.path).toBe('/readyz')
    expect(c.livenessProbe.httpGet.path).toBe('/livez')
    expect(c.resources.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) })
    expect(hangar.find((d) => d.kind === 'PodDisruptionBudget').spec).toMatchObject({ minAvailable: 1 })
    expect(
      JSON.parse(hangar.find((d) => d.kind === 'ConfigMap').data['config.json']).runtime.kubernetes.inCluster,
    ).toBe(true)
  })
})
