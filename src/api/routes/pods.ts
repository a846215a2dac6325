import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Deleted, IdParams } from '../../contract/common.js'
import { LogQuery } from '../../contract/logs.js'
import { CreatePod, Pod, PodActionBody, PodConnections, PodList, PodListQuery, UpdatePod } from '../../contract/pod.js'
import { cudaOutsideGpu } from '../../domain/endpoints/endpointRules.js'
import { DomainError } from '../../domain/errors.js'
import { streamLog } from '../logStream.js'
import type { AppDeps } from '../app.js'

const tags = ['pods']

/** Pods. Writes need an ALL key; RESTRICTED keys (limited to endpoints) cannot use them at all. */
export const podRoutes =
  ({ pods, podLinks, publicUrl }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.post(
      '/v2/pods',
      {
        schema: { tags, summary: 'Create a pod', body: CreatePod, response: { 201: Pod } },
        // As on endpoints: a `gpu` holding only CUDA fields next to `cpu` is named for what it is (422),
        // not as a missing `gpu.id`.
        preValidation: async (req) => {
          const errors = cudaOutsideGpu(req.body, 'pods')
          if (errors.length)
            throw new DomainError(
              'unprocessable',
              errors.length === 1 ? errors[0] : 'CUDA constraints apply only to GPU pods',
              errors,
            )
        },
      },
      async (req, reply) => reply.code(201).send(await pods.create(req.principal, req.body)),
    )
    app.get(
      '/v2/pods',
      { schema: { tags, summary: "List the caller's pods", querystring: PodListQuery, response: { 200: PodList } } },
      async (req) => ({ pods: await pods.list(req.principal, req.query.includeClusterPods) }),
    )
    app.get(
      '/v2/pods/:id/connections',
      {
        schema: {
          tags,
          summary: 'How to reach a pod now (Hangar extension)',
          description:
            'Browser links to its HTTP ports through /proxy (a token for that pod and port in the link, valid 12 hours), the SSH command only when 22/tcp answers as an SSH server, and why an ERROR pod failed.',
          params: IdParams,
          response: { 200: PodConnections },
        },
      },
      async (req) => {
        const pod = await pods.get(req.principal, req.params.id)
        const error = pod.status === 'ERROR' ? await pods.lastError(req.principal, pod.id) : null
        if (!podLinks || pod.status !== 'RUNNING') return { error, http: [], ssh: null }
        const http = pod.ports
          .filter((p) => p.endsWith('/http'))
          .map((p) => {
            const port = Number(p.split('/')[0])
            const link = podLinks.issue(req.principal, pod.id, port)
            return {
              port,
              url: `${publicUrl()}/proxy/${pod.id}/${port}/?hangar_link=${link.token}`,
              expiresAt: new Date(link.expiresAt).toISOString(),
            }
          })
        const ssh = (await podLinks.servesSsh(pod)) && pod.ssh.direct ? { command: pod.ssh.direct.command } : null
        return { error, http, ssh }
      },
    )
    app.get(
      '/v2/pods/:id',
      { schema: { tags, summary: 'Get a pod', params: IdParams, response: { 200: Pod } } },
      async (req) => pods.get(req.principal, req.params.id),
    )
    app.patch(
      '/v2/pods/:id',
      {
        schema: {
          tags,
          summary: 'Update a pod',
          description:
            'Every field optional. A change to what runs (image, command, env, ports, disk, registry, mounts) restarts a RUNNING pod to apply it (refused with 409 while it is locked); other statuses apply it at the next start. Mounts: omitted or {} unchanged; a kind not present at create, an empty network array or a changed volumeId are 400.',
          params: IdParams,
          body: UpdatePod,
          response: { 200: Pod },
        },
      },
      async (req) => pods.update(req.principal, req.params.id, req.body),
    )
    app.delete(
      '/v2/pods/:id',
      { schema: { tags, summary: 'Terminate a pod', params: IdParams, response: { 204: Deleted } } },
      async (req, reply) => {
        await pods.terminate(req.principal, req.params.id)
        return reply.code(204).send(null)
      },
    )
    app.post(
      '/v2/pods/:id/action',
      {
        schema: {
          tags,
          summary: 'Start, stop, restart or terminate a pod',
          description:
            "409 when the action is not in the pod's `actions` now (a locked pod cannot be stopped or restarted). terminate answers 204.",
          params: IdParams,
          body: PodActionBody,
          response: { 200: Pod, 204: Deleted },
        },
      },
      async (req, reply) => {
        const pod = await pods.action(req.principal, req.params.id, req.body.action)
        return pod ? pod : reply.code(204).send(null)
      },
    )
    app.get(
      '/v2/pods/:id/logs',
      { schema: { tags, summary: "Stream a pod's logs (text/event-stream)", params: IdParams, querystring: LogQuery } },
      async (req, reply) => streamLog(req, reply, await pods.logs(req.principal, req.params.id), req.query),
    )
  }
