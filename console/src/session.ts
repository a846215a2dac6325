import { createContext } from 'preact'
import { useContext } from 'preact/hooks'
import type { CreatedSession, Me, OidcProvider, StartedOidcSignIn } from '../../src/contract/member.js'
import { ApiError, Client } from './api.js'

/**
 * The signed-in user: the key (an API key, or the session token a member's sign-in gave) lives in
 * sessionStorage only (gone when the tab closes), never in a cookie or URL.
 */
export interface Session {
  client: Client
  /** Admin keys see the API keys page. */
  admin: boolean
  /** Who is calling, with the permissions the pages go by (a member's role; an API key's permission). */
  me: Me
}

const KEY = 'hangar.apiKey'

export function storedKey(): string | null {
  return sessionStorage.getItem(KEY)
}

/**
 * Checks a key against the API (and whether it is an admin key) before keeping it for this tab.
 * `onRefused` is called when a later call is answered 401 (the key was revoked or expired meanwhile).
 */
export async function signIn(key: string, onRefused?: (detail: string) => void): Promise<Session> {
  const probe = new Client(key.trim())
  await probe.get('/v2/catalog/cpus')
  const client = new Client(probe.key, '', onRefused)
  let admin = false
  try {
    await client.get('/v2/admin/keys')
    admin = true
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 403) throw err
  }
  const me = await client.get<Me>('/v2/me')
  sessionStorage.setItem(KEY, client.key)
  return { client, admin, me }
}

/** Signs a member in with email and password: the server makes a new session, kept like a key for this tab. */
export async function signInWithPassword(
  email: string,
  password: string,
  onRefused?: (detail: string) => void,
): Promise<Session> {
  const created = await new Client('').post<CreatedSession>('/v2/sessions', { email, password })
  return signIn(created.token, onRefused)
}

/** The OpenID Connect provider members may sign in with, or null when none is configured. */
export async function oidcProvider(signal?: AbortSignal): Promise<string | null> {
  return (await new Client('').get<OidcProvider>('/v2/sessions/oidc', signal)).provider?.name ?? null
}

/**
 * Leaves for the provider's sign-in page. The server binds the sign-in to this browser with a cookie (the only one
 * Hangar sets, sent back to the callback only) and sends the browser back to the console with the session token
 * in the URL's fragment (see `takeOidcResult`). With `invitation`, signing in accepts it.
 */
export async function startOidc(invitation?: string): Promise<void> {
  const started = await new Client('').post<StartedOidcSignIn>('/v2/sessions/oidc', invitation ? { invitation } : {})
  sessionStorage.setItem(OIDC_STARTED, '1')
  location.assign(started.authorizationUrl)
}

/**
 * Leaves for the provider to link it to the member signed in (their session starts it: `client` holds the token);
 * the callback comes back with `#oidc-linked=1` or `#oidc-error=<why>` (see `takeOidcResult`).
 */
export async function startOidcLink(client: Client): Promise<void> {
  const started = await client.post<StartedOidcSignIn>('/v2/sessions/oidc/link', {})
  sessionStorage.setItem(OIDC_STARTED, '1')
  location.assign(started.authorizationUrl)
}

/** Where a link of the provider ended, when this tab was just sent back from one (for the members page). */
export let oidcLinkResult: { linked: true } | { error: string } | null = null

/** Set while this tab is away at the provider: only a tab that left for a sign-in takes one back. */
const OIDC_STARTED = 'hangar.oidcStarted'

/**
 * What the OIDC callback left in the fragment (`#oidc=<token>` or `#oidc-error=<why>`), taken out of the address
 * bar and history at once so that the token stays in this tab's session storage only. Taken only by a tab that
 * started a sign-in: anyone can send a link to `/console/#oidc=<their own token>`, which would otherwise sign
 * the victim's tab in to the sender's account (a login CSRF), or `#oidc-error=<any text>` shown as a refusal.
 */
export function takeOidcResult(): { token: string } | { error: string } | null {
  const fragment = new URLSearchParams(location.hash.slice(1))
  const token = fragment.get('oidc')
  const error = fragment.get('oidc-error')
  const linked = fragment.get('oidc-linked')
  if (token === null && error === null && linked === null) return null
  history.replaceState(null, '', location.pathname)
  const started = sessionStorage.getItem(OIDC_STARTED) !== null
  sessionStorage.removeItem(OIDC_STARTED)
  if (!started) return null
  // A tab signed in that left to link the provider: the members page says how it ended.
  if (storedKey() !== null && token === null) {
    oidcLinkResult = linked !== null ? { linked: true } : { error: error ?? '' }
    return null
  }
  if (linked !== null) return null
  return token !== null ? { token } : { error: error ?? '' }
}

/** Forgets the tab's key; a member's session is also ended on the server, so the token is worth nothing after. */
export function signOut(): void {
  const key = sessionStorage.getItem(KEY)
  sessionStorage.removeItem(KEY)
  if (key?.startsWith('hs_'))
    new Client(key).del('/v2/sessions/current').catch((err: unknown) => {
      // Already ended or expired: nothing left to end. Anything else is worth seeing in the browser's console.
      if (!(err instanceof ApiError && err.status === 401)) console.warn('signing out on the server failed', err)
    })
}

/** Whether the signed-in caller holds `permission` (see the route table in docs/teams.md). */
export function can(session: Session, permission: string): boolean {
  return session.admin || session.me.permissions.includes(permission)
}

export const SessionContext = createContext<Session | null>(null)

/** The session of a signed-in page (pages are only rendered signed in). */
export function useSession(): Session {
  const s = useContext(SessionContext)
  if (!s) throw new Error('not signed in')
  return s
}
