import type { Leadership } from './Leadership.js'

/**
 * The only process of an installation (the embedded SQLite store serves one process): it leads from
 * `start` until `stop`.
 */
export class SoleLeadership implements Leadership {
  private leading = false
  private onLose: ((reason: string, handover: boolean) => Promise<void>) | null = null
  /** The running (or finished) onLead: a stop during it waits for it, so onLose never overlaps it. */
  private leadDone: Promise<unknown> = Promise.resolve()

  readonly shared = false
  /** Nobody else to hand requests to. */
  readonly leaderUrl = null

  advertise(): void {}

  get isLeader(): boolean {
    return this.leading
  }

  async start(
    onLead: () => Promise<void>,
    onLose: (reason: string, handover: boolean) => Promise<void>,
  ): Promise<void> {
    this.leading = true
    this.onLose = onLose
    const lead = onLead()
    // Only awaited by stop() to let a lead in progress finish; its failure reaches start()'s caller below.
    this.leadDone = lead.catch(() => undefined)
    await lead
  }

  async stop(): Promise<void> {
    if (!this.leading) return
    await this.leadDone
    if (!this.leading) return
    this.leading = false
    await this.onLose?.('the control plane is stopping', false)
  }
}
