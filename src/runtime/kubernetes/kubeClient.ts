import { ApiException, KubeConfig } from '@kubernetes/client-node'
import type { KubernetesConfig } from './KubernetesConfig.js'

/** The client settings of `runtime.kubernetes`: the in-cluster ServiceAccount, a kubeconfig file, or the default one. */
export function kubeConfigOf(c: Pick<KubernetesConfig, 'kubeconfig' | 'inCluster' | 'context'>): KubeConfig {
  const kc = new KubeConfig()
  if (c.inCluster) kc.loadFromCluster()
  else if (c.kubeconfig) kc.loadFromFile(c.kubeconfig)
  else kc.loadFromDefault()
  if (c.context) kc.setCurrentContext(c.context)
  if (!kc.getCurrentCluster())
    throw new Error(
      `runtime.kubernetes: no cluster in ${c.inCluster ? 'the in-cluster configuration' : (c.kubeconfig ?? 'the default kubeconfig')}`,
    )
  return kc
}

/** The HTTP status of a Kubernetes API error, if any. */
export function kubeStatusOf(err: unknown): number | undefined {
  return err instanceof ApiException ? err.code : undefined
}

/** The API server's own message of an error (the Status `message`), else the error's. */
export function kubeMessageOf(err: unknown): string {
  if (err instanceof ApiException) {
    const body = err.body as unknown
    if (typeof body === 'string') {
      try {
        const status = JSON.parse(body) as { message?: string }
        if (status.message) return status.message
      } catch {
        // Not a Status object (a proxy's text, say): the text itself is the message.
        if (body) return body
      }
    } else if (typeof body === 'object' && body !== null && 'message' in body) {
      return String((body as { message: unknown }).message)
    }
    return `HTTP ${err.code}`
  }
  return err instanceof Error ? err.message : String(err)
}
