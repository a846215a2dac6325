import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Deleted, IdParams } from '../../contract/common.js'
import {
  CreateDelegation,
  CreateRegistry,
  Delegation,
  DelegationList,
  Registry,
  RegistryList,
} from '../../contract/registry.js'
import type { AppDeps } from '../app.js'

const tags = ['registries']

/** Container registry credentials (write-only secrets) and ECR delegations. */
export const registryRoutes =
  ({ registries }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.post(
      '/v2/registries',
      {
        schema: {
          tags,
          summary: 'Store a container registry credential',
          description: 'username and password are encrypted at rest and never returned.',
          body: CreateRegistry,
          response: { 201: Registry },
        },
      },
      async (req, reply) => reply.code(201).send(await registries.create(req.principal.accountId, req.body)),
    )
    app.get(
      '/v2/registries',
      { schema: { tags, summary: 'List container registry credentials', response: { 200: RegistryList } } },
      async (req) => ({
        registries: await registries.list(req.principal.accountId),
      }),
    )
    app.get(
      '/v2/registries/delegations',
      { schema: { tags, summary: 'List registry delegations', response: { 200: DelegationList } } },
      async (req) => ({
        delegations: await registries.listDelegations(req.principal.accountId),
      }),
    )
    app.post(
      '/v2/registries/delegations',
      {
        schema: {
          tags,
          summary: 'Delegate access to an ECR repository',
          body: CreateDelegation,
          response: { 201: Delegation },
        },
      },
      async (req, reply) => reply.code(201).send(await registries.createDelegation(req.principal.accountId, req.body)),
    )
    app.delete(
      '/v2/registries/delegations/:id',
      { schema: { tags, summary: 'Delete a registry delegation', params: IdParams, response: { 204: Deleted } } },
      async (req, reply) => {
        await registries.deleteDelegation(req.principal.accountId, req.params.id)
        return reply.code(204).send(null)
      },
    )
    app.get(
      '/v2/registries/:id',
      {
        schema: {
          tags,
          summary: 'Get a container registry credential (name only)',
          params: IdParams,
          response: { 200: Registry },
        },
      },
      async (req) => registries.get(req.principal.accountId, req.params.id),
    )
    app.delete(
      '/v2/registries/:id',
      {
        schema: {
          tags,
          summary: 'Delete a container registry credential',
          description: '400 while an endpoint of the account uses it; templates that name it get registry null.',
          params: IdParams,
          response: { 204: Deleted },
        },
      },
      async (req, reply) => {
        await registries.delete(req.principal.accountId, req.params.id)
        return reply.code(204).send(null)
      },
    )
  }
