import type { Fleet } from '../../catalog/Fleet.js'
import type { RuntimeDriver } from '../../runtime/RuntimeDriver.js'
import type { Log } from '../log.js'

export interface HostMonitorOptions {
  /** Hosts whose runtime can stop answering (those with a container engine). */
  hosts: string[]
  runtime: Pick<RuntimeDriver, 'ping'>
  fleet: Pick<Fleet, 'setDown' | 'downReason'>
  /** Told when a host goes down (its workers are lost) and when it is back (left-overs are removed). */
  workers: { hostDown(hostId: string, reason: string): void; reconcileHost(hostId: string): Promise<void> }
  log: Log
  intervalMs: number
}

/**
 * Pings each host's container engine. One that does not answer within the interval is marked down: its
 * workers are lost and nothing is placed there, until it answers again.
 */
export class HostMonitor {
  private timer: NodeJS.Timeout | null = null
  private round: Promise<void> = Promise.resolve()

  constructor(private readonly o: HostMonitorOptions) {}

  start(): void {
    if (this.o.hosts.length === 0 || this.timer) return
    this.timer = setInterval(() => {
      this.round = this.round.then(() => this.check())
    }, this.o.intervalMs)
    this.timer.unref()
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    await this.round
  }

  /** One round of pings (tests call it to skip the wait). */
  async check(): Promise<void> {
    await Promise.all(this.o.hosts.map((h) => this.checkHost(h)))
  }

  private async checkHost(hostId: string): Promise<void> {
    const { fleet, workers, log } = this.o
    const timeoutMs = Math.max(1_000, this.o.intervalMs)
    let failure: string | null = null
    try {
      await Promise.race([
        this.o.runtime.ping(hostId),
        new Promise((_, reject) =>
          setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs).unref(),
        ),
      ])
    } catch (err) {
      failure = `its container engine does not answer: ${(err as Error).message}`
    }
    const wasDown = fleet.downReason(hostId) !== null
    if (failure && !wasDown) {
      log.warn({ hostId, reason: failure }, 'host down')
      fleet.setDown(hostId, failure)
      workers.hostDown(hostId, failure)
    } else if (!failure && wasDown) {
      log.info({ hostId }, 'host up again')
      fleet.setDown(hostId, null)
      await workers
        .reconcileHost(hostId)
        .catch((err: Error) => log.warn({ hostId, err: err.message }, 'cannot clean up a host that is back'))
    }
  }
}
