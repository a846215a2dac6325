import { createHash } from 'node:crypto'
import { isIPv6 } from 'node:net'
import type { Clock } from '../../domain/clock.js'
import { DomainError } from '../../domain/errors.js'
import type { CounterStore } from '../../ratelimit/CounterStore.js'
import type { SignInLimitsConfig } from './membersConfig.js'

/**
 * Limits failed password sign-ins per email and per client address, in the rate limits' counters (Redis when
 * several replicas run, so the limit is the fleet's, not each replica's).
 *
 * Each attempt is counted as a failure before its password is checked and given back when it succeeds: counted
 * only after a failure, a burst of racing attempts would all pass the check before any of them was counted. An
 * email or address over its limit is refused before any password is hashed, whatever the password, with the
 * same answer for members and strangers (the email counter counts every email asked for). A success gives back
 * only its own attempt: it never clears failures counted from another address.
 */
export class SignInThrottle {
  constructor(private readonly deps: { counters: CounterStore; clock: Clock; limits: SignInLimitsConfig }) {}

  /**
   * Runs a password check `signIn` for `email` from `ip`: refused with 429 (Retry-After, the limit named) when
   * either is over its limit; its failure (`unauthorized`) stays counted, anything else is given back.
   */
  async guard<T>(email: string, ip: string | null, signIn: () => Promise<T>): Promise<T> {
    const { limits } = this.deps
    const windows = [this.emailWindow(email), this.ipWindow(ip)]
    const [byEmail, byIp] = await this.deps.counters.hit(windows, this.deps.clock.now())
    if (byEmail.count > limits.failuresPerEmail)
      throw this.refusal('for this email', limits.failuresPerEmail, byEmail.resetMs)
    if (byIp.count > limits.failuresPerIp) throw this.refusal('from this address', limits.failuresPerIp, byIp.resetMs)
    const giveBack = () => this.deps.counters.hit(windows, this.deps.clock.now(), -1)
    try {
      const result = await signIn()
      await giveBack()
      return result
    } catch (err) {
      if (!(err instanceof DomainError && err.kind === 'unauthorized')) await giveBack()
      throw err
    }
  }

  /**
   * Runs an invitation's acceptance `accept` from `ip`, counted against the address up front like a password
   * attempt: an acceptance refused because its email is already a member's (`conflict`) stays counted, since
   * that answer says the email is one; anything else is given back. Checked before anything else is, whatever
   * the email: counted only after a refusal, racing acceptances would all pass the check (and answer) together.
   */
  async guardInvitation<T>(ip: string | null, accept: () => Promise<T>): Promise<T> {
    const windows = [this.ipWindow(ip)]
    const [byIp] = await this.deps.counters.hit(windows, this.deps.clock.now())
    if (byIp.count > this.deps.limits.failuresPerIp)
      throw this.refusal('from this address', this.deps.limits.failuresPerIp, byIp.resetMs)
    const giveBack = () => this.deps.counters.hit(windows, this.deps.clock.now(), -1)
    try {
      const result = await accept()
      await giveBack()
      return result
    } catch (err) {
      if (!(err instanceof DomainError && err.kind === 'conflict')) await giveBack()
      throw err
    }
  }

  private emailWindow(email: string) {
    // Hashed: the counters (Redis, say) need not hold anyone's email.
    const id = createHash('sha256').update(email.trim().toLowerCase()).digest('base64url').slice(0, 22)
    return { key: `signin:email:${id}`, windowMs: this.deps.limits.windowMinutes * 60_000 }
  }

  private ipWindow(ip: string | null) {
    return { key: `signin:ip:${ip ? clientOf(ip) : 'unknown'}`, windowMs: this.deps.limits.windowMinutes * 60_000 }
  }

  private refusal(what: string, limit: number, resetMs: number): DomainError {
    const retry = Math.max(1, Math.ceil(resetMs / 1000))
    return new DomainError(
      'too_many_requests',
      `too many failed sign-ins ${what}: the limit is ${limit} per ${this.deps.limits.windowMinutes} min; retry in ${retry} s`,
      undefined,
      { 'retry-after': String(retry) },
    )
  }
}

/**
 * The part of a client's address that one client holds: an IPv4 address whole, an IPv6 address's /64 (a home or
 * a cloud VM is given a whole /64, so counted per address it would be 2^64 clients), IPv4-mapped IPv6 as IPv4.
 */
export function clientOf(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)
  if (mapped) return mapped[1]
  const bare = ip.replace(/%.*$/, '')
  if (!isIPv6(bare)) return ip
  const [head, tail = null] = bare.split('::')
  const left = head ? head.split(':') : []
  const right = tail ? tail.split(':') : []
  const groups = tail === null ? left : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right]
  return `${groups
    .slice(0, 4)
    .map((g) => Number.parseInt(g, 16).toString(16))
    .join(':')}::/64`
}
