import { describe, expect, it } from 'vitest'
import { ResultPoster } from './results.js'
import { target, type Transport } from './transport.js'

/** A poster on a transport whose answers the test releases one by one; `posts` records what was posted where. */
function posterOnFake() {
  const posts: Array<{ path: string; text: string; answer: (status: number) => void }> = []
  const http = {
    postText: (t: { path: string }, _key: string, text: string) =>
      new Promise((resolve) =>
        posts.push({ path: t.path, text, answer: (status: number) => resolve({ status, drop: async () => {} }) }),
      ),
  } as unknown as Transport
  const poster = new ResultPoster({
    http,
    key: 'k',
    single: (id) => target(`http://h/done/${id}`),
    batch: target('http://h/batch'),
  })
  return { poster, posts }
}

const until = async (cond: () => boolean) => {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 5))
  expect(cond()).toBe(true)
}

describe('ResultPoster', () => {
  it('sends a result that waited behind a batch in flight in the next batch, whatever became of its job meanwhile', async () => {
    const { poster, posts } = posterOnFake()
    const first = poster.post('j1', { output: 1 }, false)
    await until(() => posts.length === 1)
    const second = poster.post('j2', { output: 2 }, false)
    posts[0].answer(200)
    await first
    await until(() => posts.length === 2)
    expect(posts[1]).toMatchObject({ path: '/batch', text: '[{"id":"j2","output":2}]' })
    posts[1].answer(200)
    await second
  })

  it('posts the results of a failed batch one by one, and the next batch does not wait for them', async () => {
    const { poster, posts } = posterOnFake()
    const first = poster.post('j1', { output: 1 }, false)
    await until(() => posts.length === 1)
    const second = poster.post('j2', { output: 2 }, false)
    posts[0].answer(503)
    // j1 again through job-done, and j2's batch at the same time.
    await until(() => posts.length === 3)
    expect(
      posts
        .slice(1)
        .map((p) => [p.path, p.text])
        .sort(),
    ).toEqual([
      ['/batch', '[{"id":"j2","output":2}]'],
      ['/done/j1', '{"output":1}'],
    ])
    for (const p of posts.slice(1)) p.answer(200)
    await Promise.all([first, second])
  })
})
