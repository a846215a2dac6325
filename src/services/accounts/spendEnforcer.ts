import type { PodAction } from '../../contract/pod.js'
import type { Store } from '../../store/Store.js'
import type { Log } from '../log.js'
import type { Principal } from './AccountService.js'
import type { SpendEnforcer } from './QuotaService.js'

/**
 * What the leader does to an account's running work at a spend limit: FINISH retires its workers (each
 * finishes the job it runs, then stops; nothing new starts) and leaves pods running; STOP stops its workers
 * now (their jobs go back to the queue) and stops its running pods (they keep their disks and can be started
 * again once the limit allows).
 */
export function spendEnforcer(o: {
  store: Pick<Store, 'workers' | 'pods'>
  workers: { stop(workerId: string, reason: string): Promise<void>; retire(workerId: string, reason: string): void }
  pods: { action(p: Principal, id: string, action: PodAction): Promise<unknown> }
  log: Log
}): SpendEnforcer {
  return {
    async atSpendLimit(accountId, mode, why) {
      for (const w of await o.store.workers.listActive()) {
        if (w.accountId !== accountId) continue
        if (mode === 'STOP') void o.workers.stop(w.id, `stopped at a spend limit: ${why}`)
        else o.workers.retire(w.id, `retired at a spend limit (it finishes its job): ${why}`)
      }
      if (mode !== 'STOP') return
      // The account's own rights, as if it stopped them itself.
      const as: Principal = {
        accountId,
        keyId: 'quota',
        permission: 'ALL',
        endpointIds: [],
        admin: false,
        rateLimitExempt: true,
      }
      for (const pod of await o.store.pods.listHoldingCapacity()) {
        if (pod.accountId !== accountId || pod.status !== 'RUNNING') continue
        try {
          await o.pods.action(as, pod.id, 'stop')
        } catch (err) {
          o.log.warn({ err, accountId, podId: pod.id }, 'stopping a pod at a spend limit failed')
        }
      }
    },
  }
}
