import type { AnyComponent } from 'preact'
import { lazy } from 'preact-iso'
import { ApiKeys } from './ApiKeys.js'
import { Billing } from './Billing.js'
import { EndpointDetail } from './endpoints/EndpointDetail.js'
import { EndpointList } from './endpoints/EndpointList.js'
import { NewEndpoint } from './endpoints/NewEndpoint.js'
import { Pods } from './Pods.js'
import { Registries } from './Registries.js'
import { Secrets } from './Secrets.js'
import { Members } from './Members.js'
import { Audit } from './Audit.js'
import { Quotas } from './Quotas.js'
import { SshKeys } from './SshKeys.js'
import { Templates } from './Templates.js'
import { Volumes } from './Volumes.js'

/** A page of the console: its routes, and its entry in the navigation (when `nav` is set). */
export interface PageModule {
  /** preact-iso route patterns, under /console. */
  paths: string[]
  component: AnyComponent
  nav?: { label: string; href: string }
  /** Shown to admin keys only. */
  admin?: boolean
}

/** The manual's page, loaded when first opened: it brings the Markdown renderer, which no other page needs. */
const Docs = lazy(() => import('./Docs.js').then((m) => m.Docs))

/** Every page, in navigation order. A new resource (pods, billing, clusters) is one module added here. */
export const PAGES: PageModule[] = [
  { paths: ['/console/endpoints/new'], component: NewEndpoint },
  { paths: ['/console/endpoints/:id', '/console/endpoints/:id/:tab'], component: EndpointDetail },
  {
    paths: ['/console/endpoints', '/console/', '/console'],
    component: EndpointList,
    nav: { label: 'Endpoints', href: '/console/endpoints' },
  },
  { paths: ['/console/pods'], component: Pods, nav: { label: 'Pods', href: '/console/pods' } },
  { paths: ['/console/volumes'], component: Volumes, nav: { label: 'Network volumes', href: '/console/volumes' } },
  { paths: ['/console/templates'], component: Templates, nav: { label: 'Templates', href: '/console/templates' } },
  { paths: ['/console/registries'], component: Registries, nav: { label: 'Registries', href: '/console/registries' } },
  { paths: ['/console/ssh-keys'], component: SshKeys, nav: { label: 'SSH keys', href: '/console/ssh-keys' } },
  { paths: ['/console/secrets'], component: Secrets, nav: { label: 'Secrets', href: '/console/secrets' } },
  { paths: ['/console/members'], component: Members, nav: { label: 'Members', href: '/console/members' } },
  { paths: ['/console/audit'], component: Audit, nav: { label: 'Audit log', href: '/console/audit' } },
  { paths: ['/console/billing'], component: Billing, nav: { label: 'Billing', href: '/console/billing' } },
  { paths: ['/console/quotas'], component: Quotas, nav: { label: 'Quotas', href: '/console/quotas' } },
  {
    paths: ['/console/api-keys'],
    component: ApiKeys,
    nav: { label: 'API keys', href: '/console/api-keys' },
    admin: true,
  },
  { paths: ['/console/docs/:doc*'], component: Docs, nav: { label: 'Docs', href: '/console/docs' } },
]
