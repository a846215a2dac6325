import { connect } from 'node:net'
import type { Pod } from '../../contract/pod.js'
import type { Clock } from '../../domain/clock.js'
import { DomainError } from '../../domain/errors.js'
import type { Principal } from '../accounts/AccountService.js'
import type { SecretBox } from '../SecretBox.js'

/** How long a link to a pod's port opens it (and the cookie it leaves keeps it open). */
export const LINK_TTL_MS = 12 * 3_600_000
/** How long the SSH banner may take before the port is taken for something else. */
const SSH_PROBE_MS = 1_500

interface LinkClaims {
  accountId: string
  keyId: string
  permission: Principal['permission']
  admin: boolean
  rateLimitExempt: boolean
  exp: number
  /** A member's link: the member, and whether `keyId` is their session (else their own key). */
  member?: { id: string; session: boolean }
}

/** Who a link stands for: the principal it was issued to, and the member behind it (checked at each use). */
export interface LinkHolder {
  principal: Principal
  /** The member who opened it, and whether through a session (`principal.keyId` is then the session's id). */
  member: { id: string; session: boolean } | null
}

/**
 * Links people can open in a browser (which cannot send an `Authorization` header) to a pod's HTTP port
 * through `/proxy/{podId}/{port}/`: the link carries a token sealed with the data dir's secret key for that
 * pod and port only, valid `LINK_TTL_MS`, giving what the key that made it could do. Every replica sharing
 * the data dir's key accepts it. Also tells whether a pod's 22/tcp really answers as an SSH server.
 */
export class PodLinks {
  constructor(private readonly deps: { secrets: SecretBox; clock: Clock }) {}

  /** A token for `port` of pod `podId`, opening it as `p`. */
  issue(p: Principal, podId: string, port: number): { token: string; expiresAt: number } {
    const exp = this.deps.clock.now() + LINK_TTL_MS
    const claims: LinkClaims = {
      accountId: p.accountId,
      keyId: p.keyId,
      permission: p.permission,
      admin: p.admin,
      rateLimitExempt: p.rateLimitExempt,
      exp,
      ...(p.member ? { member: { id: p.member.id, session: p.member.sessionId !== null } } : {}),
    }
    return {
      token: Buffer.from(this.deps.secrets.seal(JSON.stringify(claims), context(podId, port))).toString('base64url'),
      expiresAt: exp,
    }
  }

  /**
   * Who a token stands for; 401 when it is not a link to this pod and port, or expired. A member's link is only
   * as good as the session or key that opened it: the caller checks that (`AccountService.linkHolder`).
   */
  verify(token: string, podId: string, port: number): LinkHolder {
    let claims: LinkClaims
    try {
      claims = JSON.parse(
        this.deps.secrets.open(Buffer.from(token, 'base64url').toString('utf8'), context(podId, port)),
      )
    } catch {
      throw new DomainError(
        'unauthorized',
        `this link is not valid for port ${port} of pod ${podId}: open the pod's port again from the console`,
      )
    }
    if (claims.exp <= this.deps.clock.now())
      throw new DomainError(
        'unauthorized',
        `this link to port ${port} of pod ${podId} expired at ${new Date(claims.exp).toISOString()}: open it again from the console`,
      )
    return {
      principal: {
        accountId: claims.accountId,
        keyId: claims.keyId,
        permission: claims.permission,
        admin: claims.admin,
        endpointIds: [],
        rateLimitExempt: claims.rateLimitExempt === true,
      },
      member: claims.member ?? null,
    }
  }

  /** Whether the pod's SSH address answers with an SSH identification line (RFC 4253 §4.2) within a moment. */
  async servesSsh(pod: Pod): Promise<boolean> {
    const d = pod.ssh.direct
    if (!d) return false
    return new Promise((resolve) => {
      const socket = connect({ host: d.host, port: d.port })
      let seen = ''
      const done = (v: boolean) => {
        clearTimeout(timer)
        socket.destroy()
        resolve(v)
      }
      const timer = setTimeout(() => done(false), SSH_PROBE_MS)
      socket.setEncoding('latin1')
      socket.on('data', (chunk: string) => {
        seen += chunk
        if (seen.includes('\n') || seen.length >= 8) done(seen.startsWith('SSH-'))
      })
      socket.on('error', () => done(false))
      socket.on('end', () => done(seen.startsWith('SSH-')))
    })
  }
}

function context(podId: string, port: number): string {
  return `pod-link:${podId}:${port}`
}
