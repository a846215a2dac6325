import { useState } from 'preact/hooks'
import { useLocation } from 'preact-iso'
import { Page } from '../../ui.js'
import { EndpointForm } from './EndpointForm.js'

export function NewEndpoint() {
  const { route } = useLocation()
  // The create answer is the only place the webhook signing secret is ever shown: keep it on screen until read.
  const [created, setCreated] = useState<{ id: string; webhookSecret: string } | null>(null)
  if (created) {
    return (
      <Page title="Endpoint created">
        <p>Webhook signing secret, shown this once (rotate it with POST /v2/serverless/{'{id}'}/webhook-secret/rotate):</p>
        <p class="mono">{created.webhookSecret}</p>
        <button type="button" onClick={() => route(`/console/endpoints/${created.id}/jobs`)}>
          Continue
        </button>
      </Page>
    )
  }
  return (
    <Page title="New endpoint">
      {/* A queue endpoint opens on its job tester; a load balancer (no job queue) on its base URL. */}
      <EndpointForm
        onSaved={(e) =>
          'webhookSecret' in e && typeof e.webhookSecret === 'string'
            ? setCreated({ id: e.id, webhookSecret: e.webhookSecret })
            : route(`/console/endpoints/${e.id}/${e.type === 'QUEUE' ? 'jobs' : 'overview'}`)
        }
      />
    </Page>
  )
}
