/**
 * A counting limiter: at most `limit` holders at once, the others wait in order. `acquire` resolves to the
 * release (call it once); a waiter whose signal aborts leaves the line and rejects.
 */
export class Slots {
  private held = 0
  private readonly waiting: Array<{ grant: () => void }> = []

  constructor(readonly limit: number) {}

  /** Holders now, and how many wait. */
  get load(): { held: number; waiting: number } {
    return { held: this.held, waiting: this.waiting.length }
  }

  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(new Error('the start was called off'))
    if (this.held < this.limit) {
      this.held++
      return Promise.resolve(this.releaser())
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort)
          resolve(this.releaser())
        },
      }
      const onAbort = () => {
        const i = this.waiting.indexOf(waiter)
        if (i >= 0) this.waiting.splice(i, 1)
        reject(new Error('the start was called off'))
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      this.waiting.push(waiter)
    })
  }

  private releaser(): () => void {
    let released = false
    return () => {
      if (released) return
      released = true
      const next = this.waiting.shift()
      // The slot passes straight to the next waiter: `held` stays the same.
      if (next) next.grant()
      else this.held--
    }
  }
}
