import { Readable } from 'node:stream'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { EndpointJobParams } from '../../contract/job.js'
import { OpenAiBody, OpenAiParams, OpenAiResponse } from '../../contract/openai.js'
import type { AppDeps } from '../app.js'
import { jobConfig } from './jobs.js'

const tags = ['openai']
const MB = 1024 * 1024

/**
 * The OpenAI-compatible route of queue endpoints: `{queue_url}/v2/{id}/openai/v1/...`. Point an OpenAI
 * client's base URL at `.../openai/v1`. Each request becomes a job (see OpenAiService); the answer is sent
 * as text so an OpenAI error body from the worker keeps its own shape (the 4XX problem schema would reshape it).
 */
export const openAiRoutes =
  ({ openai }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    const serve = async (
      req: FastifyRequest,
      reply: FastifyReply,
      endpointId: string,
      route: string,
      body: Record<string, unknown> | undefined,
    ) => {
      const gone = new AbortController()
      reply.raw.once('close', () => {
        if (!reply.raw.writableEnded) gone.abort()
      })
      const result = await openai.handle({ principal: req.principal, endpointId, route, body, signal: gone.signal })
      if (result.kind === 'json')
        return reply.code(result.answer.status).type('application/json').send(JSON.stringify(result.answer.body))
      reply.headers({
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
      })
      return reply.send(Readable.from(result.events, { objectMode: false }))
    }
    app.post(
      '/v2/:endpointId/openai/*',
      {
        bodyLimit: 20 * MB,
        config: jobConfig('openai'),
        schema: {
          tags,
          summary: 'OpenAI-compatible request (e.g. /openai/v1/chat/completions)',
          description:
            'Runs as a job with input {openai_route, openai_input}; `stream: true` answers server-sent events as the worker streams.',
          params: OpenAiParams,
          body: OpenAiBody,
          response: { 200: OpenAiResponse },
        },
      },
      async (req, reply) => serve(req, reply, req.params.endpointId, `/${req.params['*']}`, req.body),
    )
    app.get(
      '/v2/:endpointId/openai/v1/models',
      {
        config: jobConfig('openai'),
        schema: {
          tags,
          summary: 'OpenAI-compatible model list',
          params: EndpointJobParams,
          response: { 200: OpenAiResponse },
        },
      },
      async (req, reply) => serve(req, reply, req.params.endpointId, '/v1/models', undefined),
    )
  }
