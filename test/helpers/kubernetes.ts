import { existsSync } from 'node:fs'
import { KubeConfig, VersionApi } from '@kubernetes/client-node'

/**
 * Where Kubernetes tests find their cluster: `.ci/kubernetes.sh` (or `source .ci/setup-kubernetes.sh`) starts the
 * single-node cluster, imports the test images into its containerd and exports HANGAR_TEST_KUBECONFIG.
 */
export const kubeEnv = {
  // Only the test variable: the tests patch node1 (fake GPUs) and create Pods; a KUBECONFIG of a real cluster is not for them.
  kubeconfig: process.env.HANGAR_TEST_KUBECONFIG,
  required: process.env.HANGAR_REQUIRE_KUBERNETES === '1',
  /** busybox (imported by the cluster's setup). */
  bbImage: process.env.HANGAR_TEST_K8S_BB_IMAGE ?? 'localhost/bb:latest',
  /** busybox + node + the worker SDK (localhost/hangar-test-worker of .ci/setup-podman.sh), imported into containerd. */
  workerImage: 'localhost/hangar-test-worker:latest',
  /** busybox + Debian's python3 + the unmodified runpod SDK running test/python/worker.py (HANDLER picks the handler). */
  pythonImage: 'localhost/hangar-test-python:latest',
  /** The namespace tests make their Pods in. */
  namespace: process.env.HANGAR_TEST_K8S_NAMESPACE ?? 'default',
}

/**
 * Why Kubernetes tests skip here (no kubeconfig, or an API server that does not answer), or null when they run.
 * Throws instead of skipping when HANGAR_REQUIRE_KUBERNETES=1 (CI: they must run).
 */
export async function kubernetesSkipReason(): Promise<string | null> {
  const reason = await probe()
  if (reason && kubeEnv.required)
    throw new Error(`${reason} (HANGAR_REQUIRE_KUBERNETES=1: the Kubernetes tests must run)`)
  return reason
}

async function probe(): Promise<string | null> {
  const file = kubeEnv.kubeconfig
  if (!file)
    return 'HANGAR_TEST_KUBECONFIG is not set (run `source .ci/setup-kubernetes.sh` first): Kubernetes tests skipped'
  if (!existsSync(file)) return `kubeconfig ${file} does not exist: Kubernetes tests skipped`
  const kc = new KubeConfig()
  kc.loadFromFile(file)
  try {
    await Promise.race([
      kc.makeApiClient(VersionApi).getCode(),
      new Promise((_, reject) => setTimeout(() => reject(new Error('no answer in 5 s')), 5_000).unref()),
    ])
    return null
  } catch (err) {
    return `the API server of ${file} does not answer (${(err as Error).message}): Kubernetes tests skipped`
  }
}

/** The test cluster's client settings. */
export function testKubeConfig(): KubeConfig {
  const kc = new KubeConfig()
  kc.loadFromFile(kubeEnv.kubeconfig!)
  return kc
}
