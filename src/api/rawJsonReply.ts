import type { FastifyReply } from 'fastify'
import { stringifyWithRaw } from '../domain/RawJson.js'

/**
 * Makes `reply` write its payload with stringifyWithRaw (RawJson texts as they came in) and label it JSON.
 * Fastify sets `application/json` only when its own serializer runs; with a custom one the header would be
 * missing, and the Python `runpod` SDK drops a job-take answer that lacks it (the job is then never run).
 */
export function rawJsonReply(reply: FastifyReply): FastifyReply {
  return reply.type('application/json; charset=utf-8').serializer(stringifyWithRaw)
}
