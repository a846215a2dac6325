import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { TSchema } from 'typebox'
import {
  AccountBillingQuery,
  AccountBillingSummary,
  AggregateBilling,
  BillingQuery,
  ClusterBilling,
  ClusterBillingQuery,
  EndpointBilling,
  NetworkVolumeBilling,
  NetworkVolumeBillingQuery,
  PodBilling,
  PodBillingQuery,
  ServerlessBilling,
  ServerlessBillingQuery,
  type AnyBillingQuery,
} from '../../contract/billing.js'
import type { BillingRoute } from '../../domain/billing/routes.js'
import type { AppDeps } from '../app.js'

const tags = ['billing']
/**
 * Histories are written by JSON.stringify rather than the serializer compiled from their schema: a year of 100
 * pods by day is 36,600 records (7 MB), which fast-json-stringify wrote in about 5 times as long (120-190 ms
 * against 22-30 ms, measured). The records are built in the schema's shape (domain/billing/records.ts).
 */
const nativeJson = () => (data: unknown) => JSON.stringify(data)
const RANGE =
  'startTime is snapped down and endTime (exclusive) up to bucket bounds (UTC; weeks start on Monday); lastN = the last N buckets including the current one. Amounts are USD, exact to 0.000001.'

const ROUTES: Array<{
  path: string
  route: BillingRoute
  query: TSchema
  response: TSchema
  summary: string
  description?: string
}> = [
  {
    path: '/v2/billing',
    route: 'aggregate',
    query: BillingQuery,
    response: AggregateBilling,
    summary: 'Everything the account was billed, per bucket',
    description: 'One record for every bucket of the range, zero or not.',
  },
  {
    path: '/v2/billing/pods',
    route: 'pods',
    query: PodBillingQuery,
    response: PodBilling,
    summary: 'Pod billing history',
    description: 'Grouped by gpuId (default) or podId; CPU pods are the gpuId null group.',
  },
  {
    path: '/v2/billing/serverless',
    route: 'serverless',
    query: ServerlessBillingQuery,
    response: ServerlessBilling,
    summary: 'Serverless endpoint billing history',
    description: 'Grouped by endpointId (default), podId (worker) or gpuId.',
  },
  {
    path: '/v2/billing/endpoints',
    route: 'endpoints',
    query: BillingQuery,
    response: EndpointBilling,
    summary: 'Public endpoint billing history',
    description:
      'Public endpoints (shared models billed per request) do not exist in Hangar: always no records and zero totals. Serverless endpoints are /v2/billing/serverless.',
  },
  {
    path: '/v2/billing/network-volumes',
    route: 'networkVolumes',
    query: NetworkVolumeBillingQuery,
    response: NetworkVolumeBilling,
    summary: 'Network volume billing history',
  },
  {
    path: '/v2/billing/clusters',
    route: 'clusters',
    query: ClusterBillingQuery,
    response: ClusterBilling,
    summary: 'Instant cluster billing history',
  },
]

/** The billing histories of the caller's account (an admin key may name another with `account`). */
export const billingRoutes =
  ({ billing }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    for (const r of ROUTES) {
      app.get(
        r.path,
        {
          schema: {
            tags,
            summary: r.summary,
            description: [r.description, RANGE].filter(Boolean).join(' '),
            querystring: r.query,
            response: { 200: r.response },
          },
          serializerCompiler: nativeJson,
        },
        async (req) => billing.history(req.principal, r.route, req.query as AnyBillingQuery),
      )
    }
    app.get(
      '/v2/admin/billing/accounts',
      {
        config: { access: 'admin' },
        schema: {
          tags: ['admin (Hangar extension)'],
          summary: "Each account's billing totals over a range of whole UTC days",
          querystring: AccountBillingQuery,
          response: { 200: AccountBillingSummary },
        },
      },
      async (req) => billing.accountSummary(req.query),
    )
  }
