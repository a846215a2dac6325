import { useLocation } from 'preact-iso'
import { Page } from '../../ui.js'
import { EndpointForm } from './EndpointForm.js'

export function NewEndpoint() {
  const { route } = useLocation()
  return (
    <Page title="New endpoint">
      <EndpointForm onSaved={(e) => route(`/console/endpoints/${e.id}/jobs`)} />
    </Page>
  )
}
