/**
 * Wake-ups between the control-plane processes that share one store: "job X changed", "a job of endpoint
 * E is waiting", "API keys were revoked". Messages are hints, never state: a listener re-reads the store
 * (or its own memory) when told, and delivery is best effort (a dropped connection loses what was sent
 * meanwhile, which `onGap` announces). A process never hears its own messages: it acts on its own changes
 * directly, as a single process always did.
 *
 * ```ts
 * feed.on('keys.revoked', () => cache.clear())
 * feed.publish('keys.revoked')
 * ```
 */
export interface ChangeFeed {
  /**
   * Tells the other processes. `topic` is a short name without spaces; `payload` one line (ids). Sends are
   * batched per turn of the event loop, and identical messages within a batch are sent once.
   */
  publish(topic: string, payload?: string): void
  /** Listens to `topic` as published by the other processes; returns the unsubscribe function. */
  on(topic: string, listener: (payload: string) => void): () => void
  /** Listens to gaps: messages may have been lost (the feed reconnected), so re-check what is awaited. */
  onGap(listener: () => void): () => void
  /** Connects; resolves once messages flow (or, for the sole process, at once). */
  start(): Promise<void>
  /** Sends what is queued and disconnects. */
  stop(): Promise<void>
}

/** Listeners by topic, and gap listeners: the part every adapter shares. */
export class FeedListeners {
  private readonly byTopic = new Map<string, Set<(payload: string) => void>>()
  private readonly gaps = new Set<() => void>()

  on(topic: string, listener: (payload: string) => void): () => void {
    const set = this.byTopic.get(topic) ?? new Set()
    set.add(listener)
    this.byTopic.set(topic, set)
    return () => set.delete(listener)
  }

  onGap(listener: () => void): () => void {
    this.gaps.add(listener)
    return () => this.gaps.delete(listener)
  }

  deliver(topic: string, payload: string): void {
    for (const l of this.byTopic.get(topic) ?? []) l(payload)
  }

  gap(): void {
    for (const l of this.gaps) l()
  }
}
