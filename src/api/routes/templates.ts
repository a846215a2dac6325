import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Deleted, IdParams } from '../../contract/common.js'
import { CreateTemplate, Template, TemplateList, TemplateSource, UpdateTemplate } from '../../contract/template.js'
import type { AppDeps } from '../app.js'

const tags = ['templates']

/** Templates of the caller, plus the public template catalog. */
export const templateRoutes =
  ({ templates }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.post(
      '/v2/templates',
      { schema: { tags, summary: 'Create a template', body: CreateTemplate, response: { 201: Template } } },
      async (req, reply) => reply.code(201).send(await templates.create(req.principal.accountId, req.body)),
    )
    app.get(
      '/v2/templates',
      { schema: { tags, summary: "List the caller's templates", response: { 200: TemplateList } } },
      async (req) => ({
        templates: await templates.list(req.principal.accountId),
      }),
    )
    app.get(
      '/v2/templates/:id',
      {
        schema: {
          tags,
          summary: 'Get a template: own, public or official',
          params: IdParams,
          response: { 200: Template },
        },
      },
      async (req) => templates.get(req.principal.accountId, req.params.id),
    )
    app.patch(
      '/v2/templates/:id',
      {
        schema: {
          tags,
          summary: 'Update an own template',
          description:
            'Never applied to endpoints or pods already created from it. Public templates of other accounts and official templates are 404.',
          params: IdParams,
          body: UpdateTemplate,
          response: { 200: Template },
        },
      },
      async (req) => templates.update(req.principal.accountId, req.params.id, req.body),
    )
    app.delete(
      '/v2/templates/:id',
      {
        schema: {
          tags,
          summary: 'Delete an own template',
          description: '400 while an endpoint of the account is bound to it.',
          params: IdParams,
          response: { 204: Deleted },
        },
      },
      async (req, reply) => {
        await templates.delete(req.principal.accountId, req.params.id)
        return reply.code(204).send(null)
      },
    )
    app.get(
      '/v2/catalog/templates',
      {
        // Like the rest of the catalog, readable with any valid key.
        config: { access: 'read', restricted: 'any' },
        schema: {
          tags: ['catalog'],
          summary: 'Public template catalog',
          description:
            'official: shipped with Hangar; community: public templates of every account (newest 100); verified: always empty (Hangar verifies no templates).',
          querystring: TemplateSource,
          response: { 200: TemplateList },
        },
      },
      async (req) => ({ templates: await templates.catalog(req.principal.accountId, req.query.source) }),
    )
  }
