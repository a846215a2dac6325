import { render } from 'preact'
import { LocationProvider, Route, Router, useLocation } from 'preact-iso'
import { useEffect, useState } from 'preact/hooks'
import { PAGES } from './pages/index.js'
import { SignIn } from './pages/SignIn.js'
import { Invite } from './pages/Invite.js'
import { can, SessionContext, signIn, signOut, storedKey, takeOidcResult, type Session } from './session.js'
import { NAV_PERMISSIONS } from './navPermissions.js'
import { NotFoundView } from './ui.js'
import './styles.css'

function NotFound() {
  return <NotFoundView />
}

function Shell({ session, onSignOut }: { session: Session; onSignOut: () => void }) {
  const { path } = useLocation()
  const [menu, setMenu] = useState(false)
  const pages = PAGES.filter((p) => !p.admin || session.admin)
  // A member's navigation lists the pages their role may read (an API key's lists them all, as before).
  const shown = (href: string) =>
    session.me.kind !== 'member' || !NAV_PERMISSIONS[href] || can(session, NAV_PERMISSIONS[href])
  useEffect(() => setMenu(false), [path])
  return (
    <div class="shell">
      <header class="top">
        <a class="brand" href="/console/endpoints">
          Hangar
        </a>
        <button class="menu-toggle" type="button" aria-expanded={menu} onClick={() => setMenu(!menu)}>
          Menu
        </button>
        <nav class={menu ? 'nav open' : 'nav'} aria-label="Main">
          {pages
            .filter((p) => p.nav && shown(p.nav.href))
            .map((p) => (
              <a key={p.nav!.href} href={p.nav!.href} class={path.startsWith(p.nav!.href) ? 'active' : ''}>
                {p.nav!.label}
              </a>
            ))}
          <a href="/docs" target="_blank" rel="noreferrer">
            API docs
          </a>
          <button type="button" class="link" onClick={onSignOut}>
            Sign out
          </button>
        </nav>
      </header>
      <main>
        <Router>
          {[
            ...pages.flatMap((p) => p.paths.map((path) => <Route key={path} path={path} component={p.component} />)),
            <Route key="404" default component={NotFound} />,
          ]}
        </Router>
      </main>
    </div>
  )
}

/** Where an OIDC sign-in ended, if the console was just sent back from one (read once, before the first render). */
const oidcResult = takeOidcResult()

function App() {
  const [session, setSession] = useState<Session | null>(null)
  const [checking, setChecking] = useState(() => storedKey() !== null || (oidcResult !== null && 'token' in oidcResult))
  const [notice, setNotice] = useState<string | null>(null)
  // The server stopped accepting the key: back to the sign-in form, saying why.
  const onRefused = (detail: string) => {
    signOut()
    setSession(null)
    setNotice(detail)
  }
  useEffect(() => {
    // Back from the OIDC provider, signed in: the session token replaces whatever key the tab held.
    // A reload keeps the tab's key: check it again (it may have been revoked) before showing pages.
    const key = oidcResult && 'token' in oidcResult ? oidcResult.token : storedKey()
    if (!key) return
    signIn(key, onRefused)
      .then(setSession)
      .catch(() => signOut())
      .finally(() => setChecking(false))
  }, [])
  if (checking) return <p class="muted center">Signing in…</p>
  // An invitation's link opens its own page (signed in or not): joining signs the invitee in.
  if (location.pathname.replace(/\/$/, '') === '/console/invite')
    return <Invite onSignedIn={setSession} onRefused={onRefused} />
  if (!session)
    return (
      <SignIn
        onSignedIn={setSession}
        onRefused={onRefused}
        notice={notice}
        oidcError={oidcResult && 'error' in oidcResult ? oidcResult.error : null}
      />
    )
  return (
    <SessionContext.Provider value={session}>
      <LocationProvider scope="/console">
        <Shell
          session={session}
          onSignOut={() => {
            signOut()
            setSession(null)
          }}
        />
      </LocationProvider>
    </SessionContext.Provider>
  )
}

render(<App />, document.getElementById('app')!)
