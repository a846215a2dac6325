import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Cluster, ClusterList, CreateCluster, UpdateCluster } from '../../contract/cluster.js'
import { Deleted, IdParams } from '../../contract/common.js'
import { PodList } from '../../contract/pod.js'
import type { AppDeps } from '../app.js'

const tags = ['clusters']

/** Instant clusters; their member pods are managed only here (through /v2/pods they answer 409). */
export const clusterRoutes =
  ({ clusters }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.post(
      '/v2/clusters',
      {
        schema: {
          tags,
          summary: 'Create an instant cluster',
          description: 'Every member is placed in one data center, or none is (400 saying what is missing).',
          body: CreateCluster,
          response: { 201: Cluster },
        },
      },
      async (req, reply) => reply.code(201).send(await clusters.create(req.principal, req.body)),
    )
    app.get(
      '/v2/clusters',
      { schema: { tags, summary: "List the caller's clusters", response: { 200: ClusterList } } },
      async (req) => ({ clusters: await clusters.list(req.principal) }),
    )
    app.get(
      '/v2/clusters/:id',
      { schema: { tags, summary: 'Get a cluster', params: IdParams, response: { 200: Cluster } } },
      async (req) => clusters.get(req.principal, req.params.id),
    )
    app.patch(
      '/v2/clusters/:id',
      {
        schema: {
          tags,
          summary: 'Rename a cluster (only name)',
          params: IdParams,
          body: UpdateCluster,
          response: { 200: Cluster },
        },
      },
      async (req) => clusters.rename(req.principal, req.params.id, req.body),
    )
    app.delete(
      '/v2/clusters/:id',
      {
        schema: {
          tags,
          summary: 'Delete a cluster, terminating every member',
          params: IdParams,
          response: { 204: Deleted },
        },
      },
      async (req, reply) => {
        await clusters.delete(req.principal, req.params.id)
        return reply.code(204).send(null)
      },
    )
    app.get(
      '/v2/clusters/:id/pods',
      {
        schema: {
          tags,
          summary: "A cluster's members as full pods, by rank",
          params: IdParams,
          response: { 200: PodList },
        },
      },
      async (req) => ({
        pods: await clusters.members(req.principal, req.params.id),
      }),
    )
  }
