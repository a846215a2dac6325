/**
 * Sample worker `hangar/openai:latest`: a stand-in language model behind the OpenAI-compatible route. Its
 * one model, `hangar-echo`, answers a chat with the last user message (or a completion with the prompt),
 * word by word when streamed (`input.delayMs`-style pacing comes from the body's `x_delay_ms`). Ordinary
 * jobs get their input back, like `hangar/echo`.
 */
import { randomUUID } from 'node:crypto'
import { openai, openAiError, serve, sleep, type OpenAiCall } from '../worker/index.js'

const MODEL = 'hangar-echo'
const now = () => Math.floor(Date.now() / 1000)

await serve({
  concurrency: 8,
  handler: openai(respond, (job) => job.input),
})

function respond(call: OpenAiCall): unknown {
  const { route, body } = call
  if (route === '/v1/models')
    return { object: 'list', data: [{ id: MODEL, object: 'model', created: 0, owned_by: 'hangar' }] }
  if (route !== '/v1/chat/completions' && route !== '/v1/completions')
    return openAiError(`route ${route} is not served by this worker`, 404)
  if (body.model !== undefined && body.model !== MODEL)
    return openAiError(`model ${JSON.stringify(body.model)} does not exist; this worker serves ${MODEL}`, 404)
  const chat = route === '/v1/chat/completions'
  const text = chat ? lastUserMessage(body.messages) : String(body.prompt ?? '')
  const id = `${chat ? 'chatcmpl' : 'cmpl'}-${randomUUID()}`
  const usage = {
    prompt_tokens: words(text).length,
    completion_tokens: words(text).length,
    total_tokens: 2 * words(text).length,
  }
  if (call.stream) return streamed(call, chat, id, text)
  if (chat)
    return {
      id,
      object: 'chat.completion',
      created: now(),
      model: MODEL,
      choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop', logprobs: null }],
      usage,
    }
  return {
    id,
    object: 'text_completion',
    created: now(),
    model: MODEL,
    choices: [{ index: 0, text, finish_reason: 'stop', logprobs: null }],
    usage,
  }
}

async function* streamed(call: OpenAiCall, chat: boolean, id: string, text: string): AsyncGenerator<unknown> {
  const delayMs = Number(call.body.x_delay_ms ?? 0)
  const chunk = (delta: Record<string, unknown>, finish: string | null) =>
    chat
      ? {
          id,
          object: 'chat.completion.chunk',
          created: now(),
          model: MODEL,
          choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
        }
      : {
          id,
          object: 'text_completion',
          created: now(),
          model: MODEL,
          choices: [{ index: 0, text: delta.content ?? '', finish_reason: finish, logprobs: null }],
        }
  if (chat) yield chunk({ role: 'assistant', content: '' }, null)
  for (const [i, word] of words(text).entries()) {
    if (delayMs > 0) await sleep(delayMs, call.job.signal)
    yield chunk({ content: i === 0 ? word : ` ${word}` }, null)
  }
  yield chunk({}, 'stop')
}

function lastUserMessage(messages: unknown): string {
  if (!Array.isArray(messages)) return ''
  const user = [...messages].reverse().find((m) => (m as { role?: unknown })?.role === 'user') as
    | { content?: unknown }
    | undefined
  const content = user?.content
  if (typeof content === 'string') return content
  // Content parts: the text ones, joined.
  if (Array.isArray(content))
    return content
      .map((p) => (p as { text?: unknown })?.text)
      .filter((t) => typeof t === 'string')
      .join(' ')
  return ''
}

function words(text: string): string[] {
  return text.split(/\s+/).filter(Boolean)
}
