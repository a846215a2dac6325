import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Deleted, IdParams } from '../../contract/common.js'
import { AccountQuotas, AccountQuotasList, SetQuotas } from '../../contract/quota.js'
import { DomainError } from '../../domain/errors.js'
import type { AppDeps } from '../app.js'

const adminTags = ['admin (Hangar extension)']
const config = { access: 'admin' as const }

/** Quotas and spend limits per account (docs/quotas.md): set by the admin, read by the account. */
export const quotaRoutes =
  ({ quotas: maybe }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    const quotas = () => {
      if (!maybe) throw new DomainError('unavailable', 'quotas are not kept by this server')
      return maybe
    }
    app.get(
      '/v2/account/quotas',
      {
        schema: {
          tags: ['account'],
          summary: "The account's quotas: use against limits (Hangar extension)",
          description:
            'GPUs held, workers.max summed, pods, network volume GB, spend this UTC hour and month; fair share.',
          response: { 200: AccountQuotas },
        },
      },
      async (req) => quotas().view(req.principal.accountId),
    )
    app.get(
      '/v2/admin/quotas',
      {
        config,
        schema: {
          tags: adminTags,
          summary: "Every account's quotas, use against limits",
          response: { 200: AccountQuotasList },
        },
      },
      async () => ({ accounts: await quotas().list() }),
    )
    app.get(
      '/v2/admin/accounts/:id/quotas',
      {
        config,
        schema: {
          tags: adminTags,
          summary: "An account's quotas (id or name)",
          params: IdParams,
          response: { 200: AccountQuotas },
        },
      },
      async (req) => quotas().get(req.params.id),
    )
    app.put(
      '/v2/admin/accounts/:id/quotas',
      {
        config,
        schema: {
          tags: adminTags,
          summary: "Set an account's quotas (the whole set: a quota left out has no limit)",
          params: IdParams,
          body: SetQuotas,
          response: { 200: AccountQuotas },
        },
      },
      async (req) => quotas().set(req.params.id, req.body),
    )
    app.delete(
      '/v2/admin/accounts/:id/quotas',
      {
        config,
        schema: {
          tags: adminTags,
          summary: "Remove an account's quotas (no limits, weight 1)",
          params: IdParams,
          response: { 204: Deleted },
        },
      },
      async (req, reply) => {
        await quotas().remove(req.params.id)
        return reply.code(204).send(null)
      },
    )
  }
