import { useState } from 'preact/hooks'
import type { CreateTemplate, Template, TemplateCategory, TemplateList } from '../../../src/contract/template.js'
import { useSession } from '../session.js'
import { checkedOf, confirmDelete, Field, Loading, Page, Problems, useAction, useLoad, inputValue } from '../ui.js'

function TemplateTable({ templates, onDelete }: { templates: Template[]; onDelete?: (t: Template) => void }) {
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th>Name</th>
            <th>Image</th>
            <th>Use</th>
            <th>Category</th>
            {onDelete && <th />}
          </tr>
        </thead>
        <tbody>
          {templates.map((t) => (
            <tr key={t.id}>
              <td>
                {t.name}
                <div class="muted mono">{t.id}</div>
              </td>
              <td class="mono">{t.image}</td>
              <td>{t.serverless ? 'serverless' : 'pods'}</td>
              <td>{t.category}</td>
              {onDelete && (
                <td>
                  <button type="button" class="danger" onClick={() => onDelete(t)}>
                    Delete
                  </button>
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}

/** The official templates, the account's own, and a form to add one. */
export function Templates() {
  const { client } = useSession()
  const own = useLoad((signal) => client.get<TemplateList>('/v2/templates', signal), [])
  const official = useLoad((signal) => client.get<TemplateList>('/v2/catalog/templates', signal), [])
  const [form, setForm] = useState({
    name: '',
    image: '',
    args: '',
    category: 'CPU' as TemplateCategory,
    serverless: true,
  })
  const create = useAction(async () => {
    const body: CreateTemplate = {
      name: form.name,
      image: form.image,
      category: form.category,
      serverless: form.serverless,
      ...(form.args ? { args: form.args } : {}),
    }
    await client.post<Template>('/v2/templates', body)
    setForm({ ...form, name: '', image: '', args: '' })
    own.reload()
  })
  const remove = useAction(async (t: Template) => {
    if (!confirmDelete(`template ${t.name}`)) return
    await client.del(`/v2/templates/${t.id}`)
    own.reload()
  })
  return (
    <Page title="Templates">
      <h2>Yours</h2>
      <Problems error={remove.error} />
      {!own.data ? (
        <Loading error={own.error} what="templates" />
      ) : own.data.templates.length === 0 ? (
        <p class="empty">None yet.</p>
      ) : (
        <TemplateTable templates={own.data.templates} onDelete={(t) => void remove.run(t)} />
      )}
      <h2>New template</h2>
      <form
        class="form"
        noValidate
        onSubmit={(e) => {
          e.preventDefault()
          void create.run()
        }}
      >
        <Problems error={create.error} fields={['name', 'image', 'args', 'category', 'serverless']} />
        <Field label="Name" name="name" error={create.error}>
          <input name="name" value={form.name} onInput={(e) => setForm({ ...form, name: inputValue(e) })} />
        </Field>
        <Field label="Image" name="image" error={create.error}>
          <input name="image" value={form.image} onInput={(e) => setForm({ ...form, image: inputValue(e) })} />
        </Field>
        <Field label="Command (args)" name="args" error={create.error}>
          <input name="args" value={form.args} onInput={(e) => setForm({ ...form, args: inputValue(e) })} />
        </Field>
        <Field label="Category" name="category" error={create.error}>
          <select
            name="category"
            value={form.category}
            onChange={(e) => setForm({ ...form, category: inputValue<TemplateCategory>(e) })}
          >
            <option value="CPU">CPU</option>
            <option value="NVIDIA">NVIDIA</option>
            <option value="AMD">AMD</option>
          </select>
        </Field>
        <label class="inline">
          <input
            type="checkbox"
            checked={form.serverless}
            onChange={(e) => setForm({ ...form, serverless: checkedOf(e) })}
          />{' '}
          For serverless endpoints (otherwise pods)
        </label>
        <div class="form-actions">
          <button class="primary" type="submit" disabled={create.busy}>
            Create template
          </button>
        </div>
      </form>
      <h2>Official</h2>
      {!official.data ? (
        <Loading error={official.error} what="templates" />
      ) : (
        <TemplateTable templates={official.data.templates} />
      )}
    </Page>
  )
}
