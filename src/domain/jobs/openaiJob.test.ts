import { describe, expect, it } from 'vitest'
import { chunkToSse, hasDone, openAiAnswer, openAiJobInput, wantsStream } from './openaiJob.js'

describe('OpenAI route rules', () => {
  it('carries the route and body in the job input as worker-vllm reads them', () => {
    expect(openAiJobInput('/v1/chat/completions', { model: 'm', stream: true })).toEqual({ openai_route: '/v1/chat/completions', openai_input: { model: 'm', stream: true } })
    expect(openAiJobInput('/v1/models', undefined)).toEqual({ openai_route: '/v1/models', openai_input: {} })
    expect(wantsStream({ stream: true })).toBe(true)
    expect(wantsStream({ stream: 'yes' })).toBe(false)
    expect(wantsStream(undefined)).toBe(false)
  })

  it.each([
    ['raw SSE text from vLLM passes as is', 'data: {"a":1}\n\ndata: {"a":2}\n\n', 'data: {"a":1}\n\ndata: {"a":2}\n\n'],
    ['raw SSE missing its blank line gets one', 'data: {"a":1}\n', 'data: {"a":1}\n\n'],
    ['a chunk object is one event', { id: 'c', choices: [] }, 'data: {"id":"c","choices":[]}\n\n'],
    ['a batch of chunk objects is one event each', [{ a: 1 }, { a: 2 }], 'data: {"a":1}\n\ndata: {"a":2}\n\n'],
    ['a plain string is one event of that text', 'hello', 'data: hello\n\n'],
  ])('%s', (_name, chunk, sse) => {
    expect(chunkToSse(chunk)).toBe(sse)
  })

  it('sees the [DONE] event only as an event of its own', () => {
    expect(hasDone('data: {"a":1}\n\ndata: [DONE]\n\n')).toBe(true)
    expect(hasDone('data: {"text":"[DONE]"}\n\n')).toBe(false)
  })

  it.each([
    ['the single item of an aggregated stream is the response', [{ object: 'chat.completion' }], 200, { object: 'chat.completion' }],
    ['a plain output is the response', { object: 'list', data: [] }, 200, { object: 'list', data: [] }],
    ['an OpenAI error keeps its code', [{ error: { message: 'no such model', code: 404 } }], 404, { error: { message: 'no such model', code: 404 } }],
    ["vLLM's older error shape keeps its code", { object: 'error', message: 'bad', code: 422 }, 422, { object: 'error', message: 'bad', code: 422 }],
    ['an error without a usable code is a 400', { error: 'broken' }, 400, { error: 'broken' }],
    ['no output is null', undefined, 200, null],
  ])('%s', (_name, output, status, body) => {
    expect(openAiAnswer(output)).toEqual({ status, body })
  })
})
