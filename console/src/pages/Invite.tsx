import { useState } from 'preact/hooks'
import type { CreatedSession, InvitationPreview } from '../../../src/contract/member.js'
import { Client } from '../api.js'
import { oidcProvider, signIn, startOidc, type Session } from '../session.js'
import { Field, Loading, Problems, inputValue, useAction, useLoad, when } from '../ui.js'

/**
 * The page an invitation's link opens (/console/invite#<token>): says which account and role it offers, and
 * makes the invitee a member with the password they choose, signed in (or, where an OpenID Connect provider is
 * configured, with the email the provider vouches for). The token is in the fragment, which the browser never
 * sends, and is posted in a body only.
 */
export function Invite({
  onSignedIn,
  onRefused,
}: {
  onSignedIn: (s: Session) => void
  onRefused: (d: string) => void
}) {
  const token = location.hash.slice(1)
  const anonymous = new Client('')
  const offer = useLoad(
    (signal) => anonymous.post<InvitationPreview>('/v2/invitations/preview', { token }, signal),
    [token],
  )
  const [form, setForm] = useState({ email: '', name: '', password: '' })
  const provider = useLoad((signal) => oidcProvider(signal), [])
  const viaProvider = useAction(() => startOidc(token))
  const accept = useAction(async () => {
    const created = await anonymous.post<CreatedSession>('/v2/invitations/accept', {
      token,
      email: form.email,
      password: form.password,
      ...(form.name ? { name: form.name } : {}),
    })
    history.replaceState(null, '', '/console/')
    onSignedIn(await signIn(created.token, onRefused))
  })
  const onInput = (k: keyof typeof form) => (e: Event) => setForm({ ...form, [k]: inputValue(e) })
  return (
    <main class="signin">
      <h1>Hangar</h1>
      {!offer.data ? (
        <Loading error={offer.error} what="the invitation" />
      ) : (
        <form
          class="form"
          aria-label="Accept the invitation"
          noValidate
          onSubmit={(e) => {
            e.preventDefault()
            void accept.run()
          }}
        >
          <p>
            You are invited to <strong>{offer.data.accountName}</strong> as <strong>{offer.data.role}</strong> (until{' '}
            {when(offer.data.expiresAt)}).
          </p>
          <Problems error={accept.error} fields={['email', 'name', 'password']} />
          <Field label="Email" name="email" error={accept.error}>
            <input name="email" type="email" autoComplete="username" value={form.email} onInput={onInput('email')} />
          </Field>
          <Field label="Name" name="name" error={accept.error}>
            <input name="name" type="text" autoComplete="name" value={form.name} onInput={onInput('name')} />
          </Field>
          <Field label="Password" name="password" hint="12 characters or more" error={accept.error}>
            <input
              name="password"
              type="password"
              autoComplete="new-password"
              value={form.password}
              onInput={onInput('password')}
            />
          </Field>
          <div class="form-actions">
            <button class="primary" type="submit" disabled={accept.busy}>
              Join
            </button>
            {provider.data && (
              <button type="button" disabled={viaProvider.busy} onClick={() => void viaProvider.run()}>
                Join with {provider.data}
              </button>
            )}
          </div>
          <Problems error={viaProvider.error} />
        </form>
      )}
    </main>
  )
}
