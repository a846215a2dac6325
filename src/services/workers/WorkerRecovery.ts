import { LABELS } from '../../runtime/labels.js'
import type { ListedWorkload } from '../../runtime/RuntimeDriver.js'
import type { WorkerRecord } from '../../store/WorkerStore.js'
import { loseJob } from '../jobs/loseJob.js'
import { lbAddress } from '../loadBalancer/lbWorker.js'
import { adoptableAllocation } from './adoptableAllocation.js'
import type { WorkerContext } from './WorkerContext.js'
import type { WorkerLifecycle } from './WorkerLifecycle.js'

/**
 * Workers across restarts, leader changes and hosts that stop answering: adopting the workloads of a previous
 * run (or of a leader that died), removing those no record wants, giving up on a host's workers, and calling
 * off starts in progress when this process stops leading.
 */
export class WorkerRecovery {
  constructor(
    private readonly ctx: WorkerContext<
      'store' | 'runtime' | 'catalog' | 'lifecycle' | 'installationId' | 'baseUrl' | 'log'
    >,
    private readonly lifecycle: Pick<WorkerLifecycle, 'takeBack' | 'recordEnded' | 'abandon'>,
  ) {}

  /**
   * After a restart or a leader change, the workers: adopts those of the previous run (or of a leader that died)
   * that still run and can still reach the control plane (same URL), on their own capacity, for endpoints that
   * still exist; removes the others and any workload of this installation no record knows. Their running jobs
   * are `recoverJobs`'s.
   */
  async adoptWorkers(): Promise<void> {
    const { deps } = this.ctx
    const { store, runtime, log } = deps
    const listed = new Map<string, ListedWorkload>()
    for (const l of await runtime.list({ [LABELS.installation]: deps.installationId, [LABELS.kind]: 'worker' }))
      listed.set(l.ref, l)
    for (const w of await store.workers.listActive()) {
      const found = w.runtimeRef ? listed.get(w.runtimeRef) : undefined
      if (w.runtimeRef) listed.delete(w.runtimeRef)
      const notAdopted = found ? await this.adopt(w, found) : 'its workload is not running'
      if (notAdopted === null) continue
      if (w.runtimeRef)
        await runtime
          .remove(w.runtimeRef)
          .catch((err: Error) =>
            log.warn({ workerId: w.id, err: err.message }, 'cannot remove a worker of the previous run'),
          )
      await this.lifecycle.recordEnded(w.id, 'exited', 'the control plane restarted')
      log.info(
        { workerId: w.id, endpointId: w.endpointId, runtimeRef: w.runtimeRef, reason: notAdopted },
        'worker of the previous run removed',
      )
    }
    // Started by the previous run but never recorded as started (it crashed in between): not wanted.
    for (const l of listed.values())
      await runtime
        .remove(l.ref)
        .catch((err: Error) =>
          log.warn(
            { runtimeRef: l.ref, err: err.message },
            'cannot remove a workload the previous run left unrecorded',
          ),
        )
  }

  /**
   * Then the running jobs of every previous worker go back to the queue (counted as retried): results posted
   * while no control plane listened are lost, so a job runs again rather than never ends. With
   * `keepRunningJobs` (other processes served the protocol meanwhile, so results were not lost) an adopted
   * worker keeps its running jobs, those taken while it was being adopted included; only those of workers not
   * adopted go back.
   */
  async recoverJobs(opts: { keepRunningJobs?: boolean } = {}): Promise<void> {
    const { deps } = this.ctx
    for (const job of await deps.store.jobs.listInProgress()) {
      const adopted = opts.keepRunningJobs && job.workerId ? this.ctx.live.get(job.workerId) : undefined
      if (adopted) adopted.jobs.add(job.id)
      else
        await loseJob(deps.lifecycle, job, {
          workerId: job.workerId ?? '',
          reason: opts.keepRunningJobs
            ? 'its worker was lost while the control plane changed leader'
            : 'the control plane restarted while it ran',
          counts: true,
        })
    }
  }

  /**
   * A host's runtime stopped answering: its workers are lost (their jobs requeued by the usual rules) without
   * waiting for a word from that runtime. The fleet places nothing there meanwhile (Fleet.setDown).
   */
  hostDown(hostId: string, reason: string): void {
    for (const w of this.ctx.live.values()) {
      if (w.allocation?.hostId !== hostId) continue
      if (this.lifecycle.abandon(w, `worker ${w.id} lost: host ${hostId} is down (${reason})`))
        this.ctx.deps.log.warn(
          { workerId: w.id, endpointId: w.endpointId, hostId, reason },
          'worker lost with its host',
        )
    }
  }

  /**
   * A host answers again: workloads of this installation there that no live worker owns (lost while it was
   * down) are removed.
   */
  async reconcileHost(hostId: string): Promise<void> {
    const { deps, live } = this.ctx
    const owned = new Set([...live.values()].map((w) => w.record?.runtimeRef).filter((r): r is string => !!r))
    for (const l of await deps.runtime.list({
      [LABELS.installation]: deps.installationId,
      [LABELS.kind]: 'worker',
      [LABELS.host]: hostId,
    })) {
      if (owned.has(l.ref)) continue
      const removed = await deps.runtime.remove(l.ref).then(
        () => true,
        (err: Error) => {
          deps.log.warn(
            { hostId, runtimeRef: l.ref, err: err.message },
            'cannot remove a worker left on a host that was down',
          )
          return false
        },
      )
      if (removed) deps.log.info({ hostId, runtimeRef: l.ref }, 'removed a worker left on a host that was down')
    }
  }

  /**
   * Calls off the starts in progress (the control plane stops leading): a start the runtime keeps waiting on
   * (a Pod the cluster cannot place) must not hold up the scaler's last run. Those workers then fail to start.
   */
  cancelStarts(): void {
    for (const w of this.ctx.live.values()) w.abortStart?.()
  }

  /**
   * Takes back a worker of the previous run: it must still run, reach this control plane at the URL it was
   * given, belong to an existing endpoint, and get its own capacity back. Null once adopted, else why not
   * (logged with its removal).
   */
  private async adopt(r: WorkerRecord, found: ListedWorkload): Promise<string | null> {
    const { deps } = this.ctx
    const { store, catalog, runtime, log } = deps
    const allocation = adoptableAllocation(r, found, r.hostId ? deps.baseUrl(r.hostId) : '')
    if (!allocation)
      return found.running
        ? "its workload was told another control-plane URL, or carries no allocation of this worker's host"
        : 'its workload is not running'
    const ep = await store.endpoints.get(r.endpointId)
    if (!ep) return 'its endpoint is gone'
    // Found running, it holds its capacity: counted even where this fleet's estimate has no room for it.
    if (!catalog.fleet.restore(allocation, { running: true }))
      return `its capacity on host ${allocation.hostId} is not free in this control plane's fleet`
    const handle = await runtime.adopt(found.ref).catch((err: Error) => {
      // Not adopted: the caller removes it and records its end, as for any worker that cannot be taken back.
      log.warn({ workerId: r.id, runtimeRef: found.ref, err: err.message }, 'cannot adopt a worker of the previous run')
      return null
    })
    if (!handle) {
      catalog.fleet.release(r.id)
      return 'the runtime could not adopt it'
    }
    await this.lifecycle.takeBack(
      r,
      allocation,
      handle,
      ep.type === 'LOAD_BALANCER' ? lbAddress(handle.ports, ep.env) : null,
    )
    log.info(
      { workerId: r.id, endpointId: r.endpointId, runtimeRef: r.runtimeRef, hostId: r.hostId },
      'worker of the previous run adopted',
    )
    return null
  }
}
