import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Deleted, IdParams } from '../../contract/common.js'
import { EndpointMetrics, MetricsQuery } from '../../contract/metrics.js'
import {
  CreatedEndpoint,
  CreateEndpoint,
  Endpoint,
  EndpointList,
  ReleaseList,
  RotatedWebhookSecret,
  UpdateEndpoint,
} from '../../contract/endpoint.js'
import { cudaOutsideGpu } from '../../domain/endpoints/endpointRules.js'
import { DomainError } from '../../domain/errors.js'
import type { AppDeps } from '../app.js'

const tags = ['serverless']

/** Serverless endpoints and their releases. RESTRICTED keys may read the endpoints they are limited to. */
export const serverlessRoutes =
  ({ endpoints, endpointMetrics }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.post(
      '/v2/serverless',
      {
        schema: {
          tags,
          summary: 'Create a serverless endpoint',
          description:
            "The answer carries `webhookSecret` (a Hangar extension): the secret signing the endpoint's job webhooks, shown only here.",
          body: CreateEndpoint,
          response: { 201: CreatedEndpoint },
        },
        // R3 is checked before the schema so that a `gpu` holding only CUDA fields next to `cpu` is named
        // for what it is rather than as a missing `gpu.pools`.
        preValidation: async (req) => {
          const errors = cudaOutsideGpu(req.body)
          if (errors.length)
            throw new DomainError(
              'unprocessable',
              errors.length === 1 ? errors[0] : 'CUDA constraints apply only to GPU endpoints',
              errors,
            )
        },
      },
      async (req, reply) => reply.code(201).send(await endpoints.create(req.principal, req.body)),
    )
    app.get(
      '/v2/serverless',
      {
        config: { restricted: 'list' },
        schema: { tags, summary: "List the caller's serverless endpoints", response: { 200: EndpointList } },
      },
      async (req) => ({ endpoints: await endpoints.list(req.principal) }),
    )
    app.get(
      '/v2/serverless/:id',
      {
        config: { restricted: 'endpoint' },
        schema: { tags, summary: 'Get a serverless endpoint', params: IdParams, response: { 200: Endpoint } },
      },
      async (req) => endpoints.get(req.principal, req.params.id),
    )
    app.patch(
      '/v2/serverless/:id',
      {
        schema: {
          tags,
          summary: 'Update a serverless endpoint',
          description:
            'Every field optional; `type` cannot change. `gpu.pools` and `gpu.excludedTypes` are one selection (pools alone clears the exclusions; excludedTypes only with pools); `[]`/`""` clear the CUDA limits. A change to what workers run makes a new release.',
          params: IdParams,
          body: UpdateEndpoint,
          response: { 200: Endpoint },
        },
      },
      async (req) => endpoints.update(req.principal, req.params.id, req.body),
    )
    app.delete(
      '/v2/serverless/:id',
      {
        schema: {
          tags,
          summary: 'Delete a serverless endpoint and its releases',
          params: IdParams,
          response: { 204: Deleted },
        },
      },
      async (req, reply) => {
        await endpoints.delete(req.principal, req.params.id)
        return reply.code(204).send(null)
      },
    )
    app.post(
      '/v2/serverless/:id/webhook-secret/rotate',
      {
        schema: {
          tags,
          summary: "Rotate the endpoint's webhook signing secret",
          description:
            'Hangar extension. Answers the new secret, shown only here. The previous secret keeps signing (a second signature in `webhook-signature`) until `previousSecretExpiresAt` (24 h by default, `jobs.webhookSecretOverlapMs`).',
          params: IdParams,
          response: { 200: RotatedWebhookSecret },
        },
      },
      async (req) => endpoints.rotateWebhookSecret(req.principal, req.params.id),
    )
    app.get(
      '/v2/serverless/:id/metrics',
      {
        config: { restricted: 'endpoint' },
        schema: {
          tags,
          summary: "An endpoint's metrics over a window",
          description:
            'Jobs by final status, execution and delay time percentiles, cold starts, workers by state, queue depth and (LOAD_BALANCER) proxied requests, one point per interval: 1 minute over the last `hour` (default), 15 minutes over a `day`, 1 hour over a `week`. Kept in 1-minute buckets for a day and 1-hour buckets for five weeks, summed over every replica.',
          params: IdParams,
          querystring: MetricsQuery,
          response: { 200: EndpointMetrics },
        },
      },
      async (req) => {
        const ep = await endpoints.get(req.principal, req.params.id)
        if (!endpointMetrics) throw new DomainError('unavailable', 'endpoint metrics are not kept by this server')
        return endpointMetrics.read(ep.id, req.query.window ?? 'hour')
      },
    )
    app.get(
      '/v2/serverless/:id/releases',
      {
        config: { restricted: 'endpoint' },
        schema: {
          tags,
          summary: "An endpoint's releases, newest first",
          params: IdParams,
          response: { 200: ReleaseList },
        },
      },
      async (req) => endpoints.releases(req.principal, req.params.id),
    )
  }
