import type { RuntimeDriver } from '../../runtime/RuntimeDriver.js'
import { LABELS } from '../../runtime/labels.js'
import type { SecretService } from './SecretService.js'

/**
 * `runtime` with secret references in a workload's env (`{{ RUNPOD_SECRET_<name> }}`) replaced by the
 * values of its account's secrets as it starts, the last step before the driver: worker and pod records,
 * templates, endpoints and logs keep the references, and a rotated secret reaches the next start. The account
 * is the one the start path labels the workload with (every worker and pod spec carries it); a missing
 * secret fails the start with a reason naming it, which the worker's last error and the pod's log show.
 * Everything else of `runtime` (its adapter-specific methods included) is passed through unchanged.
 */
export function withSecretEnv<R extends RuntimeDriver>(runtime: R, secrets: Pick<SecretService, 'resolveEnv'>): R {
  const start: RuntimeDriver['start'] = async (spec, hooks) => {
    const accountId = spec.labels[LABELS.account]
    // A workload without an account label has no secrets to reach; a reference in its env stays as written.
    const env = accountId ? await secrets.resolveEnv(accountId, spec.env) : spec.env
    return runtime.start(env === spec.env ? spec : { ...spec, env }, hooks)
  }
  return new Proxy(runtime, {
    get(target, prop) {
      if (prop === 'start') return start
      const value = Reflect.get(target, prop, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}
