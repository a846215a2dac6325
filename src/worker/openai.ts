/**
 * Serving the OpenAI-compatible route from a worker. A request to `{queue_url}/v2/{id}/openai/v1/...`
 * reaches the handler as a job whose input is `{openai_route, openai_input}` (the shape the reference
 * platform's vLLM worker reads). `openai()` turns that into a call of your function with the route and
 * body; what it returns is the response: an object for a plain request, or an async iterable of chunk
 * objects (e.g. `chat.completion.chunk`) when the body asked for `stream: true`. The platform turns the
 * chunks into server-sent events as they come and ends the stream with `data: [DONE]`.
 *
 * @example
 * import { serve, openai } from 'hangar/worker'
 * await serve({
 *   handler: openai(async function* ({ route, body, stream }) { ... }, async (job) => ({ native: job.input })),
 * })
 */
import type { Handler, Job } from './index.js'

/** An OpenAI API call as the handler sees it. */
export interface OpenAiCall {
  /** The path after `/openai`, e.g. `/v1/chat/completions`, `/v1/models`. */
  route: string
  /** The request body (`{}` for GET /v1/models). */
  body: Record<string, any>
  /** The body asked for server-sent events. */
  stream: boolean
  job: Job
}

/**
 * Returns the response object, or (for `stream: true`) an async iterable of chunks; may return an OpenAI
 * error object (`{error: {message, type, code}}`), answered with `code` as the HTTP status.
 */
export type OpenAiHandler = (call: OpenAiCall) => unknown

/** The OpenAI call a job carries, or null for an ordinary job. */
export function openAiCall(job: Job): OpenAiCall | null {
  const input = job.input as { openai_route?: unknown; openai_input?: unknown } | null | undefined
  if (typeof input?.openai_route !== 'string') return null
  const body =
    typeof input.openai_input === 'object' && input.openai_input !== null
      ? (input.openai_input as Record<string, any>)
      : {}
  return { route: input.openai_route, body, stream: body.stream === true, job }
}

/**
 * A handler for `serve()` that gives OpenAI-route jobs to `handler` and every other job to `fallback`
 * (without one, an ordinary job fails with a message saying the worker serves only the OpenAI route).
 */
export function openai(handler: OpenAiHandler, fallback?: Handler): Handler {
  return (job) => {
    const call = openAiCall(job)
    if (call) return handler(call)
    if (fallback) return fallback(job)
    throw new Error(
      'this worker serves only the OpenAI-compatible route (/openai/v1/...): the job input has no openai_route',
    )
  }
}

/** An OpenAI error object for an unknown route or a bad body; its `code` becomes the HTTP status. */
export function openAiError(
  message: string,
  code = 400,
  type = code === 404 ? 'NotFoundError' : 'BadRequestError',
): { error: { message: string; type: string; code: number } } {
  return { error: { message, type, code } }
}
