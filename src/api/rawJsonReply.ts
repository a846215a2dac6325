import type { FastifyReply } from 'fastify'
import { serializeWithRaw } from '../domain/RawJson.js'

/**
 * Makes `reply` write its payload with serializeWithRaw (RawJson texts as they came in) and label it JSON.
 * Fastify sets `application/json` only when its own serializer runs; with a custom one the header would be
 * missing, and the Python `runpod` SDK drops a job-take answer that lacks it (the job is then never run).
 */
export function rawJsonReply(reply: FastifyReply): FastifyReply {
  // A Buffer is a payload Fastify sends as it is; its types only name the string a serializer usually returns.
  return reply.type('application/json; charset=utf-8').serializer(serializeWithRaw as (payload: unknown) => string)
}
