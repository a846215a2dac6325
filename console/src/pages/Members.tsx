import { useState } from 'preact/hooks'
import type { CreatedInvitation, InvitationList, Member, MemberList, Role } from '../../../src/contract/member.js'
import { can, oidcLinkResult, oidcProvider, startOidcLink, useSession } from '../session.js'
import {
  confirmDelete,
  CopyButton,
  Field,
  Loading,
  Page,
  Problems,
  inputValue,
  useAction,
  useLoad,
  when,
} from '../ui.js'

const ROLES: Role[] = ['owner', 'admin', 'developer', 'billing', 'read-only']

/** The account's members and their roles, and invitations by link (owners and admins change them). */
export function Members() {
  const session = useSession()
  const { client } = session
  const manage = can(session, 'members.write')
  const self = session.me.member?.id
  const members = useLoad((signal) => client.get<MemberList>('/v2/members', signal), [])
  const invitations = useLoad(
    (signal) => (manage ? client.get<InvitationList>('/v2/invitations', signal) : Promise.resolve(null)),
    [manage],
  )
  // A member who joined with a password links the provider to sign in with it (their session starts the link).
  const provider = useLoad((signal) => (self ? oidcProvider(signal) : Promise.resolve(null)), [self])
  const link = useAction(() => startOidcLink(client))
  const [role, setRole] = useState<Role>('developer')
  const [created, setCreated] = useState<CreatedInvitation | null>(null)
  const invite = useAction(async () => {
    setCreated(await client.post<CreatedInvitation>('/v2/invitations', { role }))
    invitations.reload()
  })
  const change = useAction(async (m: Member, next: Role) => {
    await client.patch<Member>(`/v2/members/${m.id}`, { role: next })
    members.reload()
  })
  const remove = useAction(async (m: Member) => {
    if (!confirmDelete(`member ${m.email} (their sessions and keys stop at once)`)) return
    await client.del(`/v2/members/${m.id}`)
    members.reload()
  })
  const revoke = useAction(async (id: string) => {
    await client.del(`/v2/invitations/${id}`)
    invitations.reload()
  })
  return (
    <Page title="Members">
      <Problems error={change.error ?? remove.error ?? revoke.error ?? link.error} />
      {oidcLinkResult && 'error' in oidcLinkResult && <div class="problem">{oidcLinkResult.error}</div>}
      {oidcLinkResult && 'linked' in oidcLinkResult && (
        <p class="muted">Linked: you can sign in with {provider.data ?? 'the provider'} from now on.</p>
      )}
      {provider.data && (
        <div class="form-actions">
          <button type="button" disabled={link.busy} onClick={() => void link.run()}>
            Link {provider.data}
          </button>
          <span class="muted small">to sign in with it (its email must be yours: {session.me.member?.email})</span>
        </div>
      )}
      {!members.data ? (
        <Loading error={members.error} what="members" />
      ) : members.data.members.length === 0 ? (
        <p class="empty">No members yet: invite someone below.</p>
      ) : (
        <ul class="items">
          {members.data.members.map((m) => (
            <li key={m.id}>
              <span>
                <span class="mono">{m.email}</span> {m.name} <span class="muted small">since {when(m.createdAt)}</span>
              </span>
              <span>
                {manage && m.id !== self ? (
                  <select
                    name={`role-${m.id}`}
                    aria-label={`Role of ${m.email}`}
                    value={m.role}
                    onChange={(e) => void change.run(m, inputValue<Role>(e))}
                  >
                    {ROLES.map((r) => (
                      <option key={r} value={r}>
                        {r}
                      </option>
                    ))}
                  </select>
                ) : (
                  <span class="badge">{m.role}</span>
                )}{' '}
                {(manage || m.id === self) && (
                  <button type="button" class="danger" onClick={() => void remove.run(m)}>
                    {m.id === self ? 'Leave' : 'Remove'}
                  </button>
                )}
              </span>
            </li>
          ))}
        </ul>
      )}
      {manage && (
        <>
          <h2>Invitations</h2>
          {invitations.data && (
            <ul class="items">
              {invitations.data.invitations
                .filter((i) => !i.acceptedAt && !i.revokedAt)
                .map((i) => (
                  <li key={i.id}>
                    <span>
                      <span class="mono">{i.id}</span> {i.role}{' '}
                      <span class="muted small">until {when(i.expiresAt)}</span>
                    </span>
                    <button type="button" onClick={() => void revoke.run(i.id)}>
                      Revoke
                    </button>
                  </li>
                ))}
            </ul>
          )}
          <form
            class="form"
            aria-label="Invite someone"
            onSubmit={(e) => {
              e.preventDefault()
              void invite.run()
            }}
          >
            <Problems error={invite.error} />
            <Field label="Role" name="role" hint="They get a single-use link, valid 72 hours.">
              <select name="role" value={role} onChange={(e) => setRole(inputValue<Role>(e))}>
                {ROLES.map((r) => (
                  <option key={r} value={r}>
                    {r}
                  </option>
                ))}
              </select>
            </Field>
            <div class="form-actions">
              <button class="primary" type="submit" disabled={invite.busy}>
                Create invitation link
              </button>
            </div>
          </form>
          {created && (
            <div class="notice">
              Send this link to the person you invite (shown once): <span class="mono">{created.url}</span>{' '}
              <CopyButton text={created.url} />
            </div>
          )}
        </>
      )}
    </Page>
  )
}
