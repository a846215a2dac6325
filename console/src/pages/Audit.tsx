import { useState } from 'preact/hooks'
import type { AuditEntry, AuditPage } from '../../../src/contract/audit.js'
import { useSession } from '../session.js'
import { Loading, Page, Problems, inputValue, useAction, useLoad, when } from '../ui.js'

const FILTERS = [
  ['action', 'Action', 'pod.create, or pod. for every pod action'],
  ['resourceType', 'Resource type', 'endpoint, pod, secret, key, ...'],
  ['resourceId', 'Resource id', ''],
  ['actor', 'Actor (key id)', ''],
  ['since', 'Since', '2026-01-31T00:00:00Z'],
  ['until', 'Until', ''],
] as const
type Filters = Partial<Record<(typeof FILTERS)[number][0], string>>

function queryOf(filters: Filters, extra: Record<string, string> = {}): string {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries({ ...filters, ...extra })) if (v) q.set(k, v)
  return q.toString()
}

/** The audit log: who changed what, when, from where and how it ended; filters, older pages, export. */
export function Audit() {
  const { client } = useSession()
  const [draft, setDraft] = useState<Filters>({})
  const [filters, setFilters] = useState<Filters>({})
  const [older, setOlder] = useState<{ entries: AuditEntry[]; cursor: string | null } | null>(null)
  const page = useLoad(
    (signal) => client.get<AuditPage>(`/v2/audit?${queryOf(filters, { limit: '50' })}`, signal),
    [filters],
  )
  const cursor = older ? older.cursor : (page.data?.nextCursor ?? null)
  const more = useAction(async () => {
    if (!cursor) return
    const next = await client.get<AuditPage>(`/v2/audit?${queryOf(filters, { limit: '50', cursor })}`)
    setOlder({ entries: [...(older?.entries ?? []), ...next.entries], cursor: next.nextCursor })
  })
  const exportLines = useAction(async () => {
    const res = await fetch(`/v2/audit?${queryOf(filters, { format: 'jsonl' })}`, { headers: client.headers() })
    if (!res.ok) throw new Error(`export: HTTP ${res.status} ${await res.text()}`)
    const url = URL.createObjectURL(await res.blob())
    const a = document.createElement('a')
    a.href = url
    a.download = 'hangar-audit.jsonl'
    a.click()
    URL.revokeObjectURL(url)
  })
  const entries = [...(page.data?.entries ?? []), ...(older?.entries ?? [])]
  return (
    <Page title="Audit log">
      <form
        class="form filters"
        noValidate
        onSubmit={(e) => {
          e.preventDefault()
          setOlder(null)
          setFilters({ ...draft })
        }}
      >
        {FILTERS.map(([name, label, placeholder]) => (
          <label key={name}>
            {label}
            <input
              name={name}
              type="text"
              placeholder={placeholder}
              value={draft[name] ?? ''}
              onInput={(e) => setDraft({ ...draft, [name]: inputValue(e) })}
            />
          </label>
        ))}
        <div class="form-actions">
          <button class="primary" type="submit">
            Filter
          </button>
          <button type="button" disabled={exportLines.busy} onClick={() => void exportLines.run()}>
            Export JSON lines
          </button>
        </div>
      </form>
      <Problems error={more.error ?? exportLines.error} />
      {!page.data ? (
        <Loading error={page.error} what="the audit log" />
      ) : entries.length === 0 ? (
        <p class="empty">No entries.</p>
      ) : (
        <div class="table-wrap">
          <table class="audit">
            <thead>
              <tr>
                <th>When</th>
                <th>Action</th>
                <th>Resource</th>
                <th>Outcome</th>
                <th>Actor</th>
                <th>From</th>
              </tr>
            </thead>
            <tbody>
              {entries.map((e) => (
                <tr key={e.id}>
                  <td title={e.at}>{when(e.at)}</td>
                  <td class="mono">{e.action}</td>
                  <td class="mono">{e.resourceId ?? '-'}</td>
                  <td>{e.outcome === 'success' ? 'success' : `${e.outcome} (${e.status})`}</td>
                  <td>
                    <span class="mono">{e.actor.id}</span> <span class="muted small">{e.actor.type}</span>
                  </td>
                  <td class="mono">{e.ip ?? '-'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {cursor && (
        <button type="button" disabled={more.busy} onClick={() => void more.run()}>
          Older entries
        </button>
      )}
    </Page>
  )
}
