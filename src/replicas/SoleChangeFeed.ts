import { FeedListeners, type ChangeFeed } from './ChangeFeed.js'

/**
 * The feed of an installation with one process (embedded SQLite): there is nobody else to tell, so
 * `publish` does nothing and listeners never hear a message. Everything happens in-process as before.
 */
export class SoleChangeFeed implements ChangeFeed {
  private readonly listeners = new FeedListeners()

  publish(): void {}

  on(topic: string, listener: (payload: string) => void): () => void {
    return this.listeners.on(topic, listener)
  }

  onGap(listener: () => void): () => void {
    return this.listeners.onGap(listener)
  }

  async start(): Promise<void> {}

  async stop(): Promise<void> {}
}
