import { createContext } from 'preact'
import { useContext } from 'preact/hooks'
import { ApiError, Client } from './api.js'

/** The signed-in user: the key lives in sessionStorage only (gone when the tab closes), never in a cookie or URL. */
export interface Session {
  client: Client
  /** Admin keys see the API keys page. */
  admin: boolean
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
  sessionStorage.setItem(KEY, client.key)
  return { client, admin }
}

export function signOut(): void {
  sessionStorage.removeItem(KEY)
}

export const SessionContext = createContext<Session | null>(null)

/** The session of a signed-in page (pages are only rendered signed in). */
export function useSession(): Session {
  const s = useContext(SessionContext)
  if (!s) throw new Error('not signed in')
  return s
}
