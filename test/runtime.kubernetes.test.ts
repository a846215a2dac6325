import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'vitest'
import { parseConfig } from '../src/config.js'
import { KubernetesDriver } from '../src/runtime/kubernetes/KubernetesDriver.js'
import { runtimeContract } from './contracts/runtime.js'
import { kubeEnv, kubernetesSkipReason, testKubeConfig } from './helpers/kubernetes.js'

const skip = await kubernetesSkipReason()
if (skip) {
  console.warn(skip)
  describe('RuntimeDriver contract: kubernetes', () => it.skip(skip, () => undefined))
} else {
  runtimeContract(
    'kubernetes',
    async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'hangar-rt-k8s-'))
      // The single-node test cluster has no pod network (hostNetwork) and its node is this machine (host paths).
      const config = parseConfig({
        runtime: {
          kubernetes: {
            kubeconfig: kubeEnv.kubeconfig,
            namespace: kubeEnv.namespace,
            hostNetwork: true,
            networkVolumes: 'hostPath',
            imagePullPolicy: 'Never',
          },
        },
      }).runtime!.kubernetes!
      const drivers: KubernetesDriver[] = []
      return {
        driver: () => {
          const d = new KubernetesDriver({ config, dataDir, kubeConfig: testKubeConfig() })
          drivers.push(d)
          return d
        },
        image: kubeEnv.bbImage,
        hostId: 'k8s',
        scratch: join(dataDir, 'scratch'),
        cleanup: async () => {
          for (const d of drivers) await d.close()
          rmSync(dataDir, { recursive: true, force: true })
        },
      }
      // Each Pod's start and deletion go through the scheduler, the kubelet and a watch: about 10 s for the stop
      // test on a quiet machine, past 30 s once in CI right after the other stages.
    },
    { timeoutMs: 90_000 },
  )
}
