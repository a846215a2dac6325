/**
 * Which control-plane process runs the fleet-wide loops (autoscaler, job sweeper, webhook dispatcher, host
 * monitor, load-balancer health checks, usage meter) and owns the workers and pods. Exactly one process
 * leads at a time; every process serves the API.
 *
 * ```ts
 * await leadership.start(async () => { await recover(); startLoops() }, async (why) => { await stopLoops(); detach() })
 * ```
 */
export interface Leadership {
  /**
   * Begins contending. `onLead` runs each time this process becomes the leader, `onLose` each time it stops
   * being one (with why, and `handover`: whether another process will take over, so workers and pods are
   * left running for it rather than stopped); the two never overlap and alternate strictly. Resolves after the first attempt,
   * so a process that can lead at once has led (its `onLead` has finished) when `start` resolves.
   */
  start(onLead: () => Promise<void>, onLose: (reason: string, handover: boolean) => Promise<void>): Promise<void>
  /**
   * True when other processes may serve the same installation: while nobody led, they kept answering
   * workers (results were not lost), and workers and pods are handed over rather than stopped.
   */
  readonly shared: boolean
  /** True from the moment leadership is won until it is lost (while `onLead` runs too). */
  readonly isLeader: boolean
  /**
   * The base URL at which the other processes reach this one (`http://10.0.0.5:8080`): published while this
   * process leads and has finished taking over, so that followers can hand it the requests that need the
   * leader's live state (load-balancer traffic, pods). Called once the server listens.
   */
  advertise(url: string): void
  /**
   * On a follower, the URL the current leader advertised, or null while no leader is known (none elected
   * yet, or the one that advertised it holds the lead no more). Refreshed in the background, never the
   * process's own; null on the leader itself.
   */
  readonly leaderUrl: string | null
  /** Stops contending; a leader runs `onLose` and then gives leadership up for another process to take. */
  stop(): Promise<void>
}

/**
 * Runs leadership transitions one after another: a loss noticed while `onLead` still runs is handled
 * once it has finished, so the loops it starts are stopped rather than left running.
 */
export class TransitionQueue {
  private tail: Promise<void> = Promise.resolve()

  constructor(private readonly onError: (err: Error) => void) {}

  run(fn: () => Promise<void>): Promise<void> {
    this.tail = this.tail.then(fn).catch((err: Error) => this.onError(err))
    return this.tail
  }

  /** Resolves once every queued transition has run. */
  idle(): Promise<void> {
    return this.tail
  }
}
