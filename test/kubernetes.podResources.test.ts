import { CoreV1Api } from '@kubernetes/client-node'
import { afterEach, describe, expect, it } from 'vitest'
import { PodResources } from '../src/runtime/kubernetes/PodResources.js'
import { type KubeApiServer, startKubeApiServer } from './helpers/kubeApiServer.js'

describe('PodResources against a Kubernetes API server', () => {
  let api: KubeApiServer
  afterEach(async () => {
    await api?.close()
  })

  async function start() {
    api = await startKubeApiServer('hangar')
    const kc = api.kubeConfig()
    return new PodResources({
      api: kc.makeApiClient(CoreV1Api),
      namespace: 'hangar',
      pollMs: 20,
      claimTimeoutMs: 300,
    })
  }

  it('deleteClaim resolves once the claim is gone, and for a claim that does not exist', async () => {
    const resources = await start()
    api.claims.set('hangar-persistent-p1', { metadata: { name: 'hangar-persistent-p1', namespace: 'hangar' } })
    await resources.deleteClaim('hangar-persistent-p1')
    expect(api.claims.has('hangar-persistent-p1')).toBe(false)
    await resources.deleteClaim('hangar-persistent-never')
  })

  it('deleteClaim rejects, naming the claim and its finalizers, when the claim outlives the wait', async () => {
    const resources = await start()
    api.claims.set('hangar-persistent-p2', {
      metadata: { name: 'hangar-persistent-p2', namespace: 'hangar', finalizers: ['kubernetes.io/pvc-protection'] },
    })
    await expect(resources.deleteClaim('hangar-persistent-p2')).rejects.toThrow(
      'PersistentVolumeClaim hangar/hangar-persistent-p2 is still there 300 ms after its deletion (finalizers: kubernetes.io/pvc-protection)',
    )
  })

  it('ensureClaim rejects when a claim being deleted does not go', async () => {
    const resources = await start()
    api.claims.set('hangar-persistent-p3', {
      metadata: { name: 'hangar-persistent-p3', namespace: 'hangar', deletionTimestamp: new Date() },
    })
    await expect(
      resources.ensureClaim('hangar-persistent-p3', { mode: 'ReadWriteOnce', sizeGb: 1, annotations: {} }),
    ).rejects.toThrow('PersistentVolumeClaim hangar/hangar-persistent-p3 is still being deleted after 300 ms')
  })
})
