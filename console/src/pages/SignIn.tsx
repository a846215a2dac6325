import { useState } from 'preact/hooks'
import { signIn, type Session } from '../session.js'
import { Field, Problems, useAction, inputValue } from '../ui.js'

/** Asks for an API key; it is checked against the server and kept for this browser tab only. */
export function SignIn({
  onSignedIn,
  onRefused,
  notice,
}: {
  onSignedIn: (s: Session) => void
  onRefused: (detail: string) => void
  notice: string | null
}) {
  const [key, setKey] = useState('')
  const submit = useAction(async () => onSignedIn(await signIn(key, onRefused)))
  return (
    <main class="signin">
      <h1>Hangar</h1>
      <form
        class="form"
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
        {notice && !submit.error && <div class="problem">Signed out: {notice}</div>}
        <Problems error={submit.error} />
        <div class="form-actions">
          <button class="primary" type="submit" disabled={submit.busy || key.trim() === ''}>
            Sign in
          </button>
        </div>
      </form>
    </main>
  )
}
