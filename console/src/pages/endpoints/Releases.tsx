import type { ReleaseList } from '../../../../src/contract/endpoint.js'
import { useSession } from '../../session.js'
import { Loading, useLoad, when } from '../../ui.js'

/** Each change to what the workers run, newest first, and how far the latest has rolled out. */
export function Releases({ endpointId }: { endpointId: string }) {
  const { client } = useSession()
  const { data, error } = useLoad(
    (signal) => client.get<ReleaseList>(`/v2/serverless/${endpointId}/releases`, signal),
    [endpointId],
    5000,
  )
  if (!data) return <Loading error={error} what="releases" />
  const r = data.rollout
  return (
    <div>
      <p>
        Version {data.endpointVersion ?? '—'} · {r.workersOnLatest} of {r.workersTotal} workers on it (
        {Math.round(r.percentOnLatest)} %){r.inProgress && ' · rolling out'}
      </p>
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th>Version</th>
              <th>Created</th>
              <th>Workers</th>
              <th>Changes</th>
            </tr>
          </thead>
          <tbody>
            {data.releases.map((rel) => (
              <tr key={rel.id}>
                <td>{rel.version ?? '—'}</td>
                <td>{when(rel.createdAt)}</td>
                <td>{rel.workerCount}</td>
                <td>
                  {rel.diff.map((d) => (
                    <div key={d.field} class="mono small">
                      {d.field}: {JSON.stringify(d.old)} → {JSON.stringify(d.new)}
                    </div>
                  ))}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  )
}
