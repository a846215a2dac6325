import { useState } from 'preact/hooks'
import type { DataCenterList } from '../../../src/contract/catalog.js'
import type { CreateNetworkVolume, NetworkVolume, NetworkVolumeList } from '../../../src/contract/networkVolume.js'
import { useSession } from '../session.js'
import { confirmDelete, Field, Loading, Page, Problems, useAction, useLoad, inputValue } from '../ui.js'

/** Network volumes: list, create, rename or grow, delete. */
export function Volumes() {
  const { client } = useSession()
  const list = useLoad((signal) => client.get<NetworkVolumeList>('/v2/network-volumes', signal), [])
  const dcs = useLoad((signal) => client.get<DataCenterList>('/v2/catalog/datacenters', signal), [])
  const [form, setForm] = useState({ name: '', size: '10', dataCenter: '' })
  const create = useAction(async () => {
    const body: CreateNetworkVolume = {
      name: form.name,
      size: Number(form.size),
      dataCenter: form.dataCenter || (dcs.data?.dataCenters[0]?.id ?? ''),
    }
    await client.post<NetworkVolume>('/v2/network-volumes', body)
    setForm({ ...form, name: '' })
    list.reload()
  })
  const remove = useAction(async (v: NetworkVolume) => {
    if (!confirmDelete(`network volume ${v.name}`)) return
    await client.del(`/v2/network-volumes/${v.id}`)
    list.reload()
  })
  const resize = useAction(async (v: NetworkVolume) => {
    const size = window.prompt(`New size of ${v.name} in GB (volumes only grow)`, String(v.size))
    if (!size) return
    await client.patch(`/v2/network-volumes/${v.id}`, { size: Number(size) })
    list.reload()
  })
  return (
    <Page title="Network volumes">
      <Problems error={remove.error ?? resize.error} />
      {!list.data ? (
        <Loading error={list.error} what="volumes" />
      ) : list.data.networkVolumes.length === 0 ? (
        <p class="empty">No network volumes.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th>Name</th>
                <th>Size</th>
                <th>Data center</th>
                <th>Type</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {list.data.networkVolumes.map((v) => (
                <tr key={v.id}>
                  <td>
                    {v.name}
                    <div class="muted mono">{v.id}</div>
                  </td>
                  <td>{v.size} GB</td>
                  <td>{v.dataCenter}</td>
                  <td>{v.type}</td>
                  <td class="actions">
                    <button type="button" onClick={() => void resize.run(v)}>
                      Resize
                    </button>
                    <button type="button" class="danger" onClick={() => void remove.run(v)}>
                      Delete
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <h2>New volume</h2>
      <form
        class="form"
        noValidate
        onSubmit={(e) => {
          e.preventDefault()
          void create.run()
        }}
      >
        <Problems error={create.error} fields={['name', 'size', 'dataCenter']} />
        <Field label="Name" name="name" error={create.error}>
          <input name="name" value={form.name} onInput={(e) => setForm({ ...form, name: inputValue(e) })} />
        </Field>
        <Field label="Size (GB)" name="size" error={create.error}>
          <input
            name="size"
            type="number"
            value={form.size}
            onInput={(e) => setForm({ ...form, size: inputValue(e) })}
          />
        </Field>
        <Field label="Data center" name="dataCenter" error={create.error}>
          <select
            name="dataCenter"
            value={form.dataCenter}
            onChange={(e) => setForm({ ...form, dataCenter: inputValue(e) })}
          >
            {(dcs.data?.dataCenters ?? []).map((d) => (
              <option key={d.id} value={d.id}>
                {d.name} ({d.id})
              </option>
            ))}
          </select>
        </Field>
        <div class="form-actions">
          <button class="primary" type="submit" disabled={create.busy}>
            Create volume
          </button>
        </div>
      </form>
    </Page>
  )
}
