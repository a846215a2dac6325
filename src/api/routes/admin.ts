import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  AccountList,
  Account,
  ApiKey,
  ApiKeyList,
  ApiKeyQuery,
  CreateAccount,
  CreateApiKey,
  CreatedApiKey,
} from '../../contract/admin.js'
import { IdParams } from '../../contract/common.js'
import type { AppDeps } from '../app.js'

const tags = ['admin (Hangar extension)']
const config = { access: 'admin' as const }

/** Accounts and API keys; admin keys only. */
export const adminRoutes =
  ({ accounts }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get(
      '/v2/admin/accounts',
      { config, schema: { tags, summary: 'List accounts', response: { 200: AccountList } } },
      async () => ({
        accounts: await accounts.listAccounts(),
      }),
    )
    app.post(
      '/v2/admin/accounts',
      { config, schema: { tags, summary: 'Create an account', body: CreateAccount, response: { 201: Account } } },
      async (req, reply) => reply.code(201).send(await accounts.createAccount(req.body)),
    )
    app.get(
      '/v2/admin/keys',
      {
        config,
        schema: {
          tags,
          summary: 'List API keys (never the keys themselves)',
          querystring: ApiKeyQuery,
          response: { 200: ApiKeyList },
        },
      },
      async (req) => ({
        keys: await accounts.listKeys(req.query.account),
      }),
    )
    app.post(
      '/v2/admin/keys',
      {
        config,
        schema: {
          tags,
          summary: 'Create an API key; the response is the only time the key is shown',
          body: CreateApiKey,
          response: { 201: CreatedApiKey },
        },
      },
      async (req, reply) => reply.code(201).send(await accounts.createKey(req.body)),
    )
    app.post(
      '/v2/admin/keys/:id/revoke',
      { config, schema: { tags, summary: 'Revoke an API key', params: IdParams, response: { 200: ApiKey } } },
      async (req) => accounts.revokeKey(req.params.id),
    )
  }
