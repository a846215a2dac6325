import { createContext } from 'preact'
import { useContext } from 'preact/hooks'
import type { CreatedSession, Me } from '../../src/contract/member.js'
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
