import type { Endpoint } from '../contract/endpoint.js'

/**
 * An endpoint as stored: the response shape without `requestUrls` (built from the public URL when
 * answering), plus its owner, the current release version and the template it was created from.
 */
export type EndpointRecord = Omit<Endpoint, 'requestUrls'> & {
  accountId: string
  /** Release version workers must run; bumped by every change to what workers run. */
  version: number
  templateId: string | null
}
