import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { PutSshKeys, SshKeys } from '../../contract/sshKeys.js'
import { AccountOverview } from '../../contract/metrics.js'
import { DomainError } from '../../domain/errors.js'
import { accountOverview } from '../../services/accounts/accountOverview.js'
import type { AppDeps } from '../app.js'

const tags = ['account']

/** Settings of the calling account: its SSH public keys; and the account at a glance. */
export const accountRoutes =
  ({ sshKeys, endpoints, pods, billing, workers, endpointMetrics }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get(
      '/v2/account/ssh-keys',
      { schema: { tags, summary: "The account's SSH public keys", response: { 200: SshKeys } } },
      async (req) => ({
        keys: await sshKeys.keysOf(req.principal.accountId),
      }),
    )
    app.get(
      '/v2/account/overview',
      {
        schema: {
          tags,
          summary: 'The account at a glance',
          description: 'Spend since 00:00 UTC, workers and pods up now, jobs finished in the last hour.',
          response: { 200: AccountOverview },
        },
      },
      async (req) => {
        if (!endpointMetrics) throw new DomainError('unavailable', 'endpoint metrics are not kept by this server')
        return accountOverview(
          { endpoints, pods, billing, workerHealth: (id) => workers.health(id), endpointMetrics },
          req.principal,
        )
      },
    )
    app.put(
      '/v2/account/ssh-keys',
      {
        schema: {
          tags,
          summary: "Replace the account's SSH public keys",
          description:
            'Replaces the whole list ([] removes all). Only pods created later with startSsh receive the change.',
          body: PutSshKeys,
          response: { 200: SshKeys },
        },
      },
      async (req) => ({ keys: await sshKeys.replace(req.principal.accountId, req.body.keys) }),
    )
  }
