import { useState } from 'preact/hooks'
import { useLocation } from 'preact-iso'
import { CopyButton, Page } from '../../ui.js'
import { EndpointForm } from './EndpointForm.js'

/** Where a new endpoint opens: a queue endpoint on its job tester, a load balancer (no job queue) on its base URL. */
const landing = (e: { id: string; type?: string }) =>
  `/console/endpoints/${e.id}/${e.type === 'LOAD_BALANCER' ? 'overview' : 'jobs'}`

export function NewEndpoint() {
  const { route } = useLocation()
  // The create answer is the only place the webhook signing secret is ever shown: keep it on screen until read.
  const [created, setCreated] = useState<{ id: string; type?: string; webhookSecret: string } | null>(null)
  if (created) {
    return (
      <Page title="Endpoint created">
        <p>
          Webhook signing secret, shown this once (rotate it with POST /v2/serverless/{'{id}'}/webhook-secret/rotate):
        </p>
        <p>
          <span class="mono secret">{created.webhookSecret}</span> <CopyButton text={created.webhookSecret} />
        </p>
        <button type="button" onClick={() => route(landing(created))}>
          Continue
        </button>
      </Page>
    )
  }
  return (
    <Page title="New endpoint">
      <EndpointForm
        onSaved={(e) =>
          'webhookSecret' in e && typeof e.webhookSecret === 'string'
            ? setCreated({ id: e.id, type: e.type, webhookSecret: e.webhookSecret })
            : route(landing(e))
        }
      />
    </Page>
  )
}
