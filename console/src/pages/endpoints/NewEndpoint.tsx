import { useLocation } from 'preact-iso'
import { Page } from '../../ui.js'
import { EndpointForm } from './EndpointForm.js'

export function NewEndpoint() {
  const { route } = useLocation()
  return (
    <Page title="New endpoint">
      {/* A queue endpoint opens on its job tester; a load balancer (no job queue) on its base URL. */}
      <EndpointForm onSaved={(e) => route(`/console/endpoints/${e.id}/${e.type === 'QUEUE' ? 'jobs' : 'overview'}`)} />
    </Page>
  )
}
