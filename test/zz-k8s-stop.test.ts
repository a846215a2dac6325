import { it } from 'vitest'
import { parseConfig } from '../src/config.js'
import { KubernetesDriver } from '../src/runtime/kubernetes/KubernetesDriver.js'
it('stop timing', async () => {
  const config = parseConfig({ runtime: { kubernetes: { kubeconfig: process.env.KUBECONFIG, hostNetwork: true, networkVolumes: 'hostPath', imagePullPolicy: 'Never' } } }).runtime!.kubernetes!
  const d = new KubernetesDriver({ config, dataDir: '/tmp/k8sdd' })
  const t0 = Date.now()
  const w = await d.start({ id: 'x1', kind: 'worker', hostId: 'k8s', labels: {}, image: 'localhost/bb:latest', entrypoint: ['/bin/sh', '-c', 'trap "echo got-term; exit 0" TERM; echo up; while true; do sleep 0.1; done'], cmd: [], env: {}, gpus: { ids: [], virtual: false }, resources: { vcpus: 0, memoryGb: 0 }, mounts: [], ports: [] })
  console.log('started', Date.now() - t0)
  w.logs.onLine((l) => console.log(Date.now() - t0, l.source, l.line))
  await new Promise((r) => setTimeout(r, 1500))
  const t1 = Date.now()
  await w.stop(10_000)
  console.log('stopped in', Date.now() - t1, await w.exited)
  await d.remove(w.ref)
  await d.close()
}, 60_000)
