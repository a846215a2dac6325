import { describe, expect, it } from 'vitest'
import { openAiAnswer, openAiJobInput, SseEncoder, wantsStream } from './openaiJob.js'

/** The SSE text of a whole stream of these chunks. */
function sse(chunks: unknown[], error?: unknown): string {
  const encoder = new SseEncoder()
  return chunks.map((c) => encoder.chunk(c)).join('') + encoder.finish(error)
}

describe('OpenAI route rules', () => {
  it('carries the route and body in the job input as worker-vllm reads them', () => {
    expect(openAiJobInput('/v1/chat/completions', { model: 'm', stream: true })).toEqual({
      openai_route: '/v1/chat/completions',
      openai_input: { model: 'm', stream: true },
    })
    expect(openAiJobInput('/v1/models', undefined)).toEqual({ openai_route: '/v1/models', openai_input: {} })
    expect(wantsStream({ stream: true })).toBe(true)
    expect(wantsStream({ stream: 'yes' })).toBe(false)
    expect(wantsStream(undefined)).toBe(false)
  })

  it.each([
    [
      'raw SSE text from vLLM passes as is',
      ['data: {"a":1}\n\ndata: {"a":2}\n\n', 'data: [DONE]\n\n'],
      'data: {"a":1}\n\ndata: {"a":2}\n\ndata: [DONE]\n\n',
    ],
    [
      'an event cut across chunks passes byte for byte',
      ['data: {"model":"my-', 'model"}\n', '\ndata: [DO', 'NE]\n\n'],
      'data: {"model":"my-model"}\n\ndata: [DONE]\n\n',
    ],
    [
      'a chunk after a cut at an event boundary is still raw text',
      ['data: {"a":1}\n\n', '\n', ': keep-alive\n\n'],
      'data: {"a":1}\n\n\n: keep-alive\n\ndata: [DONE]\n\n',
    ],
    ['raw SSE missing its blank line at the end gets one', ['data: {"a":1}\n'], 'data: {"a":1}\n\ndata: [DONE]\n\n'],
    [
      'an object after an open event comes after its blank line',
      ['data: {"a":', '1}', { b: 2 }],
      'data: {"a":1}\n\ndata: {"b":2}\n\ndata: [DONE]\n\n',
    ],
    ['a chunk object is one event', [{ id: 'c', choices: [] }], 'data: {"id":"c","choices":[]}\n\ndata: [DONE]\n\n'],
    [
      'a batch of chunk objects is one event each',
      [[{ a: 1 }, { a: 2 }]],
      'data: {"a":1}\n\ndata: {"a":2}\n\ndata: [DONE]\n\n',
    ],
    ['a plain string is one event of that text', ['hello'], 'data: hello\n\ndata: [DONE]\n\n'],
    [
      'plain text stays plain though a later string looks like SSE',
      ['hello', 'data: x'],
      'data: hello\n\ndata: data: x\n\ndata: [DONE]\n\n',
    ],
    [
      'the [DONE] event counts only as an event of its own',
      ['data: {"text":"[DONE]"}\n\n'],
      'data: {"text":"[DONE]"}\n\ndata: [DONE]\n\n',
    ],
  ])('%s', (_name, chunks, text) => {
    expect(sse(chunks)).toBe(text)
  })

  it("ends a failed stream with an error event, closing the worker's open event first", () => {
    const error = { error: { message: 'boom', type: 'server_error', code: null } }
    expect(sse(['data: {"a":1}'], error)).toBe(`data: {"a":1}\n\ndata: ${JSON.stringify(error)}\n\ndata: [DONE]\n\n`)
    expect(sse(['data: [DONE]\n\n'], error)).toBe(`data: [DONE]\n\ndata: ${JSON.stringify(error)}\n\n`)
  })

  it.each([
    [
      'the single item of an aggregated stream is the response',
      [{ object: 'chat.completion' }],
      200,
      { object: 'chat.completion' },
    ],
    ['a plain output is the response', { object: 'list', data: [] }, 200, { object: 'list', data: [] }],
    [
      'an OpenAI error keeps its code',
      [{ error: { message: 'no such model', code: 404 } }],
      404,
      { error: { message: 'no such model', code: 404 } },
    ],
    [
      "vLLM's older error shape keeps its code",
      { object: 'error', message: 'bad', code: 422 },
      422,
      { object: 'error', message: 'bad', code: 422 },
    ],
    ['an error without a usable code is a 400', { error: 'broken' }, 400, { error: 'broken' }],
    ['no output is null', undefined, 200, null],
  ])('%s', (_name, output, status, body) => {
    expect(openAiAnswer(output)).toEqual({ status, body })
  })
})
