import { Type } from 'typebox'

/** `*` is the path after `/openai`, without its leading slash (e.g. `v1/chat/completions`). */
export const OpenAiParams = Type.Object({
  endpointId: Type.String({ minLength: 1, maxLength: 128 }),
  '*': Type.String(),
})

/** An OpenAI API request body, passed to the worker as `openai_input`. */
export const OpenAiBody = Type.Record(Type.String(), Type.Unknown(), {
  description: 'the OpenAI request body, e.g. {model, messages, stream}',
})

/** Whatever the worker answered: an OpenAI response object, or `text/event-stream` when `stream` was true. */
export const OpenAiResponse = Type.Unknown({
  description: 'the OpenAI response from the worker, or server-sent events for stream: true',
})
