/**
 * The OpenAI-compatible route of queue endpoints, as pure rules: how a request becomes a job input, and
 * how the job's output or stream chunks become the HTTP answer an OpenAI client expects.
 *
 * The job input has the shape the reference platform's vLLM worker (runpod-workers/worker-vllm) reads:
 * `{ openai_route: "/v1/chat/completions", openai_input: <request body> }`. That worker is a generator: for
 * `stream: true` it yields raw SSE text (`"data: {...}\n\n"`, several events per chunk or one cut across
 * chunks, `data: [DONE]` at the end) or, with RAW_OPENAI_OUTPUT=0, lists of chunk objects; otherwise it
 * yields the response object once, so the job's output is the aggregate `[response]`.
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
const SSE_DONE = 'data: [DONE]\n\n'

/** A string that starts with an SSE field or comment is SSE text (vLLM's raw output). */
const SSE_START = /^(data|event|id|retry):|^:/

/**
 * The SSE text of one streamed answer, built from the job's chunks in order. The stream's first non-empty
 * string decides what its strings are: SSE text (vLLM's raw output), which passes byte for byte, or plain
 * text, each string one event's data. It is decided once because worker-vllm may cut an event across
 * yields: the piece after a cut (`model",...}\n\n`) does not look like SSE and must not become an event of
 * its own. An array is a batch of chunks (vLLM with RAW_OPENAI_OUTPUT=0); anything else is one event with
 * its JSON, after the blank line that ends an event the raw text left open.
 */
export class SseEncoder {
  private raw: boolean | undefined
  /** Raw text after the last blank line: the event still open, empty between events. */
  private open = ''
  /** Whether the `[DONE]` event was sent, so `finish` does not send a second one. */
  private done = false

  /** The SSE text for one chunk of the job's stream. */
  chunk(chunk: unknown): string {
    if (typeof chunk === 'string') {
      if (this.raw === undefined && chunk !== '') this.raw = SSE_START.test(chunk)
      if (this.raw) return this.pass(chunk)
      return this.event(chunk)
    }
    if (Array.isArray(chunk)) return chunk.map((c) => this.chunk(c)).join('')
    return this.close() + this.event(JSON.stringify(chunk ?? null))
  }

  /** The end of the stream: the open event's blank line, an error event if given, then `[DONE]` unless the worker sent it. */
  finish(error?: unknown): string {
    const text = this.close() + (error === undefined ? '' : this.event(JSON.stringify(error)))
    return this.done ? text : `${text}${SSE_DONE}`
  }

  private pass(text: string): string {
    const all = this.open + text
    const end = eventsEnd(all)
    if (end > 0) this.done ||= hasDone(all.slice(0, end))
    this.open = all.slice(end)
    return text
  }

  private event(data: string): string {
    const sse = `data: ${data}\n\n`
    this.done ||= hasDone(sse)
    return sse
  }

  private close(): string {
    if (!this.open) return ''
    const blank = /\r?\n$/.test(this.open) ? '\n' : '\n\n'
    this.done ||= hasDone(this.open)
    this.open = ''
    return blank
  }
}

/** Where the last complete event of SSE text ends (after its blank line), 0 when none does. */
function eventsEnd(text: string): number {
  const lf = text.lastIndexOf('\n\n')
  const crlf = text.lastIndexOf('\n\r\n')
  return Math.max(lf < 0 ? 0 : lf + 2, crlf < 0 ? 0 : crlf + 3)
}

/** True when SSE text (starting at an event) carries the `[DONE]` event. */
function hasDone(sse: string): boolean {
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
