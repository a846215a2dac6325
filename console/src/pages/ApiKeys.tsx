import { useState } from 'preact/hooks'
import type {
  Account,
  AccountList,
  ApiKey,
  ApiKeyList,
  CreatedApiKey,
  CreateApiKey,
  Permission,
} from '../../../src/contract/admin.js'
import { useSession } from '../session.js'
import { Field, Loading, Page, Problems, useAction, useLoad, inputValue, when } from '../ui.js'

/** Admins: accounts and their API keys; a new key is shown once, right after it is created. */
export function ApiKeys() {
  const { client } = useSession()
  const accounts = useLoad((signal) => client.get<AccountList>('/v2/admin/accounts', signal), [])
  const keys = useLoad((signal) => client.get<ApiKeyList>('/v2/admin/keys', signal), [])
  const [accountName, setAccountName] = useState('')
  const [form, setForm] = useState({ account: '', name: '', permission: 'ALL' as Permission, endpointIds: '' })
  const [created, setCreated] = useState<CreatedApiKey | null>(null)
  const addAccount = useAction(async () => {
    await client.post<Account>('/v2/admin/accounts', { name: accountName })
    setAccountName('')
    accounts.reload()
  })
  const addKey = useAction(async () => {
    const ids = form.endpointIds.split(/[\s,]+/).filter(Boolean)
    const body: CreateApiKey = {
      account: form.account,
      permission: form.permission,
      ...(form.name ? { name: form.name } : {}),
      ...(ids.length ? { endpointIds: ids } : {}),
    }
    setCreated(await client.post<CreatedApiKey>('/v2/admin/keys', body))
    keys.reload()
  })
  const revoke = useAction(async (k: ApiKey) => {
    if (!window.confirm(`Revoke key ${k.prefix}…? Clients using it stop working.`)) return
    await client.post(`/v2/admin/keys/${k.id}/revoke`)
    keys.reload()
  })
  return (
    <Page title="API keys">
      <Problems error={revoke.error} />
      {created && (
        <div class="notice" role="status">
          New key for {created.accountName} (shown only now): <code class="secret">{created.key}</code>
        </div>
      )}
      {!keys.data ? (
        <Loading error={keys.error} what="keys" />
      ) : (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th>Key</th>
                <th>Account</th>
                <th>Permission</th>
                <th>Last used</th>
                <th>State</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {keys.data.keys.map((k) => (
                <tr key={k.id}>
                  <td>
                    <span class="mono">{k.prefix}…</span> {k.name}
                  </td>
                  <td>{k.accountName}</td>
                  <td>
                    {k.admin ? 'ADMIN' : k.permission}
                    {k.endpointIds.length > 0 && <div class="muted small">{k.endpointIds.join(', ')}</div>}
                  </td>
                  <td>{when(k.lastUsedAt)}</td>
                  <td>
                    {k.revokedAt
                      ? `revoked ${when(k.revokedAt)}`
                      : k.expiresAt
                        ? `expires ${when(k.expiresAt)}`
                        : 'active'}
                  </td>
                  <td>
                    {!k.revokedAt && !k.admin && (
                      <button type="button" class="danger" onClick={() => void revoke.run(k)}>
                        Revoke
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <h2>New key</h2>
      <form
        class="form"
        noValidate
        onSubmit={(e) => {
          e.preventDefault()
          void addKey.run()
        }}
      >
        <Problems error={addKey.error} fields={['account', 'name', 'permission', 'endpointIds']} />
        <Field label="Account" name="account" error={addKey.error}>
          <select name="account" value={form.account} onChange={(e) => setForm({ ...form, account: inputValue(e) })}>
            <option value="">Choose an account</option>
            {(accounts.data?.accounts ?? []).map((a) => (
              <option key={a.id} value={a.name}>
                {a.name}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Name (optional)" name="name" error={addKey.error}>
          <input name="name" value={form.name} onInput={(e) => setForm({ ...form, name: inputValue(e) })} />
        </Field>
        <Field label="Permission" name="permission" error={addKey.error}>
          <select
            name="permission"
            value={form.permission}
            onChange={(e) => setForm({ ...form, permission: inputValue<Permission>(e) })}
          >
            <option value="ALL">ALL</option>
            <option value="READ_ONLY">READ_ONLY</option>
            <option value="RESTRICTED">RESTRICTED</option>
          </select>
        </Field>
        {form.permission === 'RESTRICTED' && (
          <Field label="Endpoint ids" name="endpointIds" error={addKey.error}>
            <input
              name="endpointIds"
              value={form.endpointIds}
              onInput={(e) => setForm({ ...form, endpointIds: inputValue(e) })}
            />
          </Field>
        )}
        <div class="form-actions">
          <button class="primary" type="submit" disabled={addKey.busy}>
            Create key
          </button>
        </div>
      </form>
      <h2>Accounts</h2>
      <ul class="items">
        {(accounts.data?.accounts ?? []).map((a) => (
          <li key={a.id}>
            <span>
              {a.name} <span class="muted mono">{a.id}</span>
              {a.rateLimitExempt && <span class="muted"> · not rate limited</span>}
            </span>
          </li>
        ))}
      </ul>
      <form
        class="form row"
        noValidate
        onSubmit={(e) => {
          e.preventDefault()
          void addAccount.run()
        }}
      >
        <Field label="New account" name="name" error={addAccount.error}>
          <input name="accountName" value={accountName} onInput={(e) => setAccountName(inputValue(e))} />
        </Field>
        <button type="submit" disabled={addAccount.busy}>
          Create account
        </button>
      </form>
    </Page>
  )
}
