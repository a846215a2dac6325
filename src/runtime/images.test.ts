import { describe, expect, it } from 'vitest'
import { resolveImage } from './images.js'

describe('resolveImage', () => {
  it('runs a sample under its engine name too (localhost/hangar/<name>:<version>), and nothing else under localhost/hangar', () => {
    expect(resolveImage('localhost/hangar/echo:0.1.0', {})?.command.at(-1)).toMatch(
      /dist[/\\]sampleWorkers[/\\]echo\.js$/,
    )
    expect(resolveImage('hangar/echo', {})?.command.at(-1)).toMatch(/echo\.js$/)
    expect(resolveImage('localhost/hangar/nope:0.1.0', {})).toBeUndefined()
  })
})
