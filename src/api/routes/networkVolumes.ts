import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Deleted, IdParams } from '../../contract/common.js'
import {
  CreateNetworkVolume,
  NetworkVolume,
  NetworkVolumeList,
  UpdateNetworkVolume,
} from '../../contract/networkVolume.js'
import type { AppDeps } from '../app.js'

const tags = ['network volumes']

/** Network volumes of the caller. */
export const networkVolumeRoutes =
  ({ networkVolumes }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.post(
      '/v2/network-volumes',
      {
        schema: {
          tags,
          summary: 'Create a network volume',
          description:
            '400 when dataCenter is not in the catalog or type is not one of its networkVolumeTypes; type defaults to its first.',
          body: CreateNetworkVolume,
          response: { 201: NetworkVolume },
        },
      },
      async (req, reply) => reply.code(201).send(await networkVolumes.create(req.principal.accountId, req.body)),
    )
    app.get(
      '/v2/network-volumes',
      { schema: { tags, summary: "List the caller's network volumes", response: { 200: NetworkVolumeList } } },
      async (req) => ({
        networkVolumes: await networkVolumes.list(req.principal.accountId),
      }),
    )
    app.get(
      '/v2/network-volumes/:id',
      { schema: { tags, summary: 'Get a network volume', params: IdParams, response: { 200: NetworkVolume } } },
      async (req) => networkVolumes.get(req.principal.accountId, req.params.id),
    )
    app.patch(
      '/v2/network-volumes/:id',
      {
        schema: {
          tags,
          summary: 'Rename or grow a network volume',
          description: 'size may only grow (smaller is 400).',
          params: IdParams,
          body: UpdateNetworkVolume,
          response: { 200: NetworkVolume },
        },
      },
      async (req) => networkVolumes.update(req.principal.accountId, req.params.id, req.body),
    )
    app.delete(
      '/v2/network-volumes/:id',
      {
        schema: {
          tags,
          summary: 'Delete a network volume and its files',
          description: '400 while an endpoint of the account uses it.',
          params: IdParams,
          response: { 204: Deleted },
        },
      },
      async (req, reply) => {
        await networkVolumes.delete(req.principal.accountId, req.params.id)
        return reply.code(204).send(null)
      },
    )
  }
