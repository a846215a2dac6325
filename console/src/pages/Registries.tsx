import { useState } from 'preact/hooks'
import type { CreateRegistry, Registry, RegistryList } from '../../../src/contract/registry.js'
import { useSession } from '../session.js'
import { confirmDelete, Field, Loading, Page, Problems, useAction, useLoad, inputValue } from '../ui.js'

/** Container registry credentials: the password is write-only, so the list shows names. */
export function Registries() {
  const { client } = useSession()
  const list = useLoad((signal) => client.get<RegistryList>('/v2/registries', signal), [])
  const [form, setForm] = useState<CreateRegistry>({ name: '', username: '', password: '' })
  const create = useAction(async () => {
    await client.post<Registry>('/v2/registries', form)
    setForm({ name: '', username: '', password: '' })
    list.reload()
  })
  const remove = useAction(async (r: Registry) => {
    if (!confirmDelete(`registry credential ${r.name}`)) return
    await client.del(`/v2/registries/${r.id}`)
    list.reload()
  })
  const onInput = (k: keyof CreateRegistry) => (e: Event) => setForm({ ...form, [k]: inputValue(e) })
  const text = (k: keyof CreateRegistry, secret = false) =>
    secret ? (
      <input name={k} type="password" autoComplete="off" value={form[k]} onInput={onInput(k)} />
    ) : (
      <input name={k} type="text" autoComplete="off" value={form[k]} onInput={onInput(k)} />
    )
  return (
    <Page title="Container registries">
      <Problems error={remove.error} />
      {!list.data ? (
        <Loading error={list.error} what="registries" />
      ) : list.data.registries.length === 0 ? (
        <p class="empty">No registry credentials.</p>
      ) : (
        <ul class="items">
          {list.data.registries.map((r) => (
            <li key={r.id}>
              <span>
                {r.name} <span class="muted mono">{r.id}</span>
              </span>
              <button type="button" class="danger" onClick={() => void remove.run(r)}>
                Delete
              </button>
            </li>
          ))}
        </ul>
      )}
      <h2>New credential</h2>
      <form
        class="form"
        noValidate
        onSubmit={(e) => {
          e.preventDefault()
          void create.run()
        }}
      >
        <Problems error={create.error} fields={['name', 'username', 'password']} />
        <Field label="Name" name="name" error={create.error}>
          {text('name')}
        </Field>
        <Field label="Username" name="username" error={create.error}>
          {text('username')}
        </Field>
        <Field label="Password or token" name="password" error={create.error}>
          {text('password', true)}
        </Field>
        <div class="form-actions">
          <button class="primary" type="submit" disabled={create.busy}>
            Save credential
          </button>
        </div>
      </form>
    </Page>
  )
}
