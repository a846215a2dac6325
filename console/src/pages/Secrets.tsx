import { useState } from 'preact/hooks'
import type { CreateSecret, Secret, SecretList } from '../../../src/contract/secret.js'
import { useSession } from '../session.js'
import { confirmDelete, Field, Loading, Page, Problems, inputValue, useAction, useLoad, when } from '../ui.js'

const EMPTY: CreateSecret = { name: '', value: '', description: '' }

/** The account's secrets: values are write-only; env values reference them as {{ RUNPOD_SECRET_<name> }}. */
export function Secrets() {
  const { client } = useSession()
  const list = useLoad((signal) => client.get<SecretList>('/v2/secrets', signal), [])
  const [form, setForm] = useState<CreateSecret>(EMPTY)
  const create = useAction(async () => {
    await client.post<Secret>('/v2/secrets', form)
    setForm(EMPTY)
    list.reload()
  })
  const rotate = useAction(async (s: Secret) => {
    const value = window.prompt(`New value of ${s.name} (used from the next start of each workload)`)
    if (!value) return
    await client.patch<Secret>(`/v2/secrets/${s.id}`, { value })
    list.reload()
  })
  const remove = useAction(async (s: Secret) => {
    if (!confirmDelete(`secret ${s.name} (workloads referencing it will fail their next start)`)) return
    await client.del(`/v2/secrets/${s.id}`)
    list.reload()
  })
  const onInput = (k: keyof CreateSecret) => (e: Event) => setForm({ ...form, [k]: inputValue(e) })
  return (
    <Page title="Secrets">
      <p class="muted">
        Reference a secret in the env of a template, endpoint or pod as <code>{'{{ RUNPOD_SECRET_<name> }}'}</code>: its
        value is put in only when the workload starts and is never shown again.
      </p>
      <Problems error={remove.error ?? rotate.error} />
      {!list.data ? (
        <Loading error={list.error} what="secrets" />
      ) : list.data.secrets.length === 0 ? (
        <p class="empty">No secrets.</p>
      ) : (
        <ul class="items">
          {list.data.secrets.map((s) => (
            <li key={s.id}>
              <span>
                <span class="mono">{s.name}</span>{' '}
                <span class="muted small">
                  v{s.version}, {when(s.updatedAt)}
                </span>{' '}
                {s.description}
              </span>
              <span>
                <button type="button" onClick={() => void rotate.run(s)}>
                  Rotate
                </button>{' '}
                <button type="button" class="danger" onClick={() => void remove.run(s)}>
                  Delete
                </button>
              </span>
            </li>
          ))}
        </ul>
      )}
      <h2>New secret</h2>
      <form
        class="form"
        noValidate
        onSubmit={(e) => {
          e.preventDefault()
          void create.run()
        }}
      >
        <Problems error={create.error} fields={['name', 'value', 'description']} />
        <Field label="Name" name="name" error={create.error}>
          <input name="name" type="text" autoComplete="off" value={form.name} onInput={onInput('name')} />
        </Field>
        <Field label="Value" name="value" error={create.error}>
          <input name="value" type="password" autoComplete="off" value={form.value} onInput={onInput('value')} />
        </Field>
        <Field label="Description" name="description" error={create.error}>
          <input
            name="description"
            type="text"
            autoComplete="off"
            value={form.description ?? ''}
            onInput={onInput('description')}
          />
        </Field>
        <div class="form-actions">
          <button class="primary" type="submit" disabled={create.busy}>
            Save secret
          </button>
        </div>
      </form>
    </Page>
  )
}
