/**
 * The OpenAI-compatible route of queue endpoints, as pure rules: how a request becomes a job input, and
 * how the job's output or stream chunks become the HTTP answer an OpenAI client expects.
 *
 * The job input has the shape the reference platform's vLLM worker (runpod-workers/worker-vllm) reads:
 * `{ openai_route: "/v1/chat/completions", openai_input: <request body> }`. That worker is a generator: for
 * `stream: true` it yields raw SSE text (`"data: {...}\n\n"`, several events per chunk, `data: [DONE]` at the
 * end) or, with RAW_OPENAI_OUTPUT=0, lists of chunk objects; otherwise it yields the response object once,
 * so the job's output is the aggregate `[response]`.
 */

/** The job input of an OpenAI request: the route below `/openai` and the body as sent. */
export interface OpenAiJobInput {
  openai_route: string
  openai_input: Record<string, unknown>
  [key: string]: unknown
}

/** `route` is the path after `/openai` (e.g. `/v1/chat/completions`); a GET (models) has no body. */
export function openAiJobInput(route: string, body: Record<string, unknown> | undefined): OpenAiJobInput {
  return { openai_route: route, openai_input: body ?? {} }
}

/** True when the client asked for server-sent events (`"stream": true`, as OpenAI's API defines it). */
export function wantsStream(body: Record<string, unknown> | undefined): boolean {
  return body?.stream === true
}

/** The SSE event that ends an OpenAI stream. */
export const SSE_DONE = 'data: [DONE]\n\n'

/**
 * One stream chunk of the job as SSE text. A string that already is SSE (vLLM's raw output) passes as
 * is, ending with a blank line; any other string becomes one event's data; an array is a batch of chunks
 * (vLLM with RAW_OPENAI_OUTPUT=0); anything else is one event with its JSON.
 */
export function chunkToSse(chunk: unknown): string {
  if (typeof chunk === 'string') {
    if (/^(data|event|id|retry):|^:/.test(chunk)) return chunk.endsWith('\n\n') ? chunk : chunk.endsWith('\n') ? `${chunk}\n` : `${chunk}\n\n`
    return `data: ${chunk}\n\n`
  }
  if (Array.isArray(chunk)) return chunk.map(chunkToSse).join('')
  return `data: ${JSON.stringify(chunk ?? null)}\n\n`
}

/** True when SSE text carries the `[DONE]` event, so the route does not send a second one. */
export function hasDone(sse: string): boolean {
  return /(^|\n)data: ?\[DONE\]\s*(\n|$)/.test(sse)
}

/** The answer to a non-streaming OpenAI request. */
export type OpenAiAnswer = { status: number; body: unknown }

/**
 * The response body of a completed non-streaming request. A generator handler's output is the list of
 * what it yielded: a single item is the response itself (worker-vllm yields the response object once).
 * An OpenAI error object (`{error: {...}}`, or vLLM's older `{object: "error", ...}`) keeps its status
 * code when it names one (4xx/5xx), else is a 400, so clients raise the error they would against OpenAI.
 */
export function openAiAnswer(output: unknown): OpenAiAnswer {
  const body = Array.isArray(output) && output.length === 1 ? output[0] : output
  if (isErrorBody(body)) return { status: errorStatus(body), body }
  return { status: 200, body: body ?? null }
}

function isErrorBody(body: unknown): body is Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return false
  const b = body as Record<string, unknown>
  return b.object === 'error' || (typeof b.error === 'object' && b.error !== null) || typeof b.error === 'string'
}

function errorStatus(body: Record<string, unknown>): number {
  const inner = typeof body.error === 'object' && body.error !== null ? (body.error as Record<string, unknown>) : body
  const code = Number(inner.code ?? inner.status)
  return Number.isInteger(code) && code >= 400 && code <= 599 ? code : 400
}
