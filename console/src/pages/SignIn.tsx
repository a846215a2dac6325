import { useState } from 'preact/hooks'
import { oidcProvider, signIn, signInWithPassword, startOidc, type Session } from '../session.js'
import { Field, Problems, useAction, useLoad, inputValue } from '../ui.js'

/**
 * Signs in: a member with email and password (a session the server makes) or with the OpenID Connect provider
 * where one is configured, or anyone with an API key. The token or key is checked against the server and kept
 * for this browser tab only.
 */
export function SignIn({
  onSignedIn,
  onRefused,
  notice,
  oidcError,
}: {
  onSignedIn: (s: Session) => void
  onRefused: (detail: string) => void
  notice: string | null
  /** Why a sign-in with the provider was refused, when the console was sent back with a refusal. */
  oidcError?: string | null
}) {
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [key, setKey] = useState('')
  const member = useAction(async () => onSignedIn(await signInWithPassword(email, password, onRefused)))
  const submit = useAction(async () => onSignedIn(await signIn(key, onRefused)))
  const provider = useLoad((signal) => oidcProvider(signal), [])
  const oidc = useAction(() => startOidc())
  return (
    <main class="signin">
      <h1>Hangar</h1>
      {notice && !submit.error && !member.error && <div class="problem">Signed out: {notice}</div>}
      {oidcError && !oidc.error && <div class="problem">{oidcError}</div>}
      {provider.data && (
        <div class="form-actions">
          <button class="primary" type="button" disabled={oidc.busy} onClick={() => void oidc.run()}>
            Sign in with {provider.data}
          </button>
          <Problems error={oidc.error} />
        </div>
      )}
      <form
        class="form"
        aria-label="Sign in with an API key"
        onSubmit={(e) => {
          e.preventDefault()
          void submit.run()
        }}
      >
        <Field
          label="API key"
          name="apiKey"
          hint="The admin key is in .hangar/admin-key. The key stays in this tab's session storage."
        >
          <input
            name="apiKey"
            type="password"
            autoComplete="off"
            value={key}
            onInput={(e) => setKey(inputValue(e))}
            autoFocus
          />
        </Field>
        <Problems error={submit.error} />
        <div class="form-actions">
          <button class="primary" type="submit" disabled={submit.busy || key.trim() === ''}>
            Sign in
          </button>
        </div>
      </form>
      <p class="muted">or as a member, with email and password</p>
      <form
        class="form"
        aria-label="Sign in as a member"
        onSubmit={(e) => {
          e.preventDefault()
          void member.run()
        }}
      >
        <Field label="Email" name="email">
          <input
            name="email"
            type="email"
            autoComplete="username"
            value={email}
            onInput={(e) => setEmail(inputValue(e))}
          />
        </Field>
        <Field label="Password" name="password">
          <input
            name="password"
            type="password"
            autoComplete="current-password"
            value={password}
            onInput={(e) => setPassword(inputValue(e))}
          />
        </Field>
        <Problems error={member.error} />
        <div class="form-actions">
          <button type="submit" disabled={member.busy || email === '' || password === ''}>
            Sign in as a member
          </button>
        </div>
      </form>
    </main>
  )
}
