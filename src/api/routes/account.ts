import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { PutSshKeys, SshKeys } from '../../contract/sshKeys.js'
import type { AppDeps } from '../app.js'

const tags = ['account']

/** Settings of the calling account: its SSH public keys. */
export const accountRoutes =
  ({ sshKeys }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get('/v2/account/ssh-keys', { schema: { tags, summary: "The account's SSH public keys", response: { 200: SshKeys } } }, async (req) => ({
      keys: await sshKeys.keysOf(req.principal.accountId),
    }))
    app.put(
      '/v2/account/ssh-keys',
      {
        schema: {
          tags,
          summary: "Replace the account's SSH public keys",
          description: 'Replaces the whole list ([] removes all). Only pods created later with startSsh receive the change.',
          body: PutSshKeys,
          response: { 200: SshKeys },
        },
      },
      async (req) => ({ keys: await sshKeys.replace(req.principal.accountId, req.body.keys) }),
    )
  }
