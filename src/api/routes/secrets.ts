import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { Deleted } from '../../contract/common.js'
import { CreateSecret, Secret, SecretList, UpdateSecret } from '../../contract/secret.js'
import type { AppDeps } from '../app.js'

const tags = ['secrets']
const Ref = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128, description: 'the secret id or name' }) })

/** An account's secrets: values are write-only, referenced from env as `{{ RUNPOD_SECRET_<name> }}`. */
export const secretRoutes =
  ({ secrets }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.post(
      '/v2/secrets',
      {
        schema: {
          tags,
          summary: 'Create a secret',
          description:
            'The value is sealed at rest and never returned. Env values of templates, endpoints and pods reference it as `{{ RUNPOD_SECRET_<name> }}`; it is put in only when a workload starts.',
          body: CreateSecret,
          response: { 201: Secret },
        },
      },
      async (req, reply) => reply.code(201).send(await secrets.create(req.principal.accountId, req.body)),
    )
    app.get(
      '/v2/secrets',
      { schema: { tags, summary: "List the account's secrets (never their values)", response: { 200: SecretList } } },
      async (req) => ({ secrets: await secrets.list(req.principal.accountId) }),
    )
    app.get(
      '/v2/secrets/:id',
      { schema: { tags, summary: "Get a secret's metadata", params: Ref, response: { 200: Secret } } },
      async (req) => secrets.get(req.principal.accountId, req.params.id),
    )
    app.patch(
      '/v2/secrets/:id',
      {
        schema: {
          tags,
          summary: 'Rotate a secret or change its description',
          description:
            'A new value applies from the next start of each workload that references it; running ones keep theirs.',
          params: Ref,
          body: UpdateSecret,
          response: { 200: Secret },
        },
      },
      async (req) => secrets.update(req.principal.accountId, req.params.id, req.body),
    )
    app.delete(
      '/v2/secrets/:id',
      {
        schema: {
          tags,
          summary: 'Delete a secret',
          description: 'Workloads whose env references it fail their next start, saying which secret is missing.',
          params: Ref,
          response: { 204: Deleted },
        },
      },
      async (req, reply) => {
        await secrets.delete(req.principal.accountId, req.params.id)
        return reply.code(204).send(null)
      },
    )
  }
