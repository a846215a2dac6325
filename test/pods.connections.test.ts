import { createServer, type Server } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createPod, podBody, terminateAll, waitPod, waitPortAnswers } from './helpers/pods.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

/** GET /v2/pods/{id}/connections: browser links through the proxy, SSH only when served, why a pod failed. */
describe('pod connections', () => {
  let s: TestServer
  let alice: string
  let readOnly: string
  beforeAll(async () => {
    s = await startTestServer()
    alice = await s.accountKey('conn-alice')
    readOnly = await s.accountKey('conn-alice', 'READ_ONLY')
  })
  afterAll(async () => {
    await terminateAll(s, alice)
    await s.stop()
  })

  it('links each HTTP port through the proxy with a token for that port, kept in a cookie after the first visit', async () => {
    const pod = await createPod(s, podBody({ ports: ['8080/http', '9090/http', '22/tcp'] }), alice)
    await waitPortAnswers(await waitPod(s, pod.id, 'RUNNING', alice), 8080)
    const c = (await s.api('GET', `/v2/pods/${pod.id}/connections`, undefined, alice)).body
    expect(c.error).toBeNull()
    expect(c.http.map((h: { port: number }) => h.port)).toEqual([8080, 9090])
    // The sample program answers HTTP on 22 too: no SSH identification line, so no SSH command.
    expect(c.ssh).toBeNull()
    const link = new URL(c.http[0].url)
    expect(link.pathname).toBe(`/proxy/${pod.id}/8080/`)

    // No key: the token in the link opens the port, leaves the address bar for a cookie scoped to the port.
    const first = await fetch(link, { redirect: 'manual' })
    expect(first.status).toBe(303)
    expect(first.headers.get('location')).toBe(`/proxy/${pod.id}/8080/`)
    const cookie = first.headers.get('set-cookie')!
    expect(cookie).toMatch(new RegExp(`^hangar_link_8080=[^;]+; Path=/proxy/${pod.id}/8080/;.*HttpOnly; SameSite=Lax`))
    const jar = cookie.split(';')[0]
    const page = await fetch(`${s.url}/proxy/${pod.id}/8080/`, { headers: { cookie: jar } })
    expect(page.status).toBe(200)
    expect(await page.json()).toMatchObject({ podId: pod.id, port: 8080 })

    // The token opens only its own port, and nothing at all without it.
    const token = link.searchParams.get('hangar_link')!
    const other = await fetch(`${s.url}/proxy/${pod.id}/9090/?hangar_link=${token}`, { redirect: 'manual' })
    expect(other.status).toBe(401)
    expect((await other.json()).detail).toMatch(/not valid for port 9090/)
    expect((await fetch(`${s.url}/proxy/${pod.id}/8080/`)).status).toBe(401)
    // Keys in the header still work as before.
    expect(
      (await fetch(`${s.url}/proxy/${pod.id}/8080/`, { headers: { authorization: `Bearer ${alice}` } })).status,
    ).toBe(200)
  })

  it('gives a READ_ONLY key links that read but cannot write', async () => {
    const pod = await createPod(s, podBody({ name: 'ro' }), alice)
    await waitPod(s, pod.id, 'RUNNING', alice)
    const c = (await s.api('GET', `/v2/pods/${pod.id}/connections`, undefined, readOnly)).body
    const jar = (await fetch(c.http[0].url, { redirect: 'manual' })).headers.get('set-cookie')!.split(';')[0]
    // RUNNING comes as the program starts; its port answers a moment later.
    await until(
      async () =>
        (await fetch(`${s.url}/proxy/${pod.id}/8080/`, { headers: { cookie: jar } })).status === 200 || undefined,
      10_000,
      'the pod answers through its link',
    )
    const put = await fetch(`${s.url}/proxy/${pod.id}/8080/files/x.txt`, {
      method: 'PUT',
      body: 'x',
      headers: { cookie: jar },
    })
    expect(put.status).toBe(403)
  })

  it('offers the SSH command when an SSH server answers on the mapped port', async () => {
    // A stand-in sshd: the identification line is what the probe reads (RFC 4253 §4.2).
    const sshd: Server = createServer((sock) => sock.end('SSH-2.0-OpenSSH_9.6\r\n'))
    await new Promise<void>((r) => sshd.listen(0, '127.0.0.1', r))
    try {
      const pod = await createPod(s, podBody({ name: 'ssh', ports: ['8080/http', '22/tcp'] }), alice)
      const running = await waitPod(s, pod.id, 'RUNNING', alice)
      const direct = running.ssh.direct
      expect(direct).not.toBeNull()
      // The pod's own 22/tcp is the sample program (no SSH); a real server answers at another port.
      expect((await s.api('GET', `/v2/pods/${pod.id}/connections`, undefined, alice)).body.ssh).toBeNull()
      const { PodLinks } = await import('../src/services/pods/PodLinks.js')
      const { SecretBox } = await import('../src/services/SecretBox.js')
      const links = new PodLinks({
        secrets: SecretBox.open(`${s.dataDir}/secret.key`),
        clock: { now: () => Date.now() },
      })
      const port = (sshd.address() as { port: number }).port
      expect(
        await links.servesSsh({ ...running, ssh: { proxy: null, direct: { ...direct, host: '127.0.0.1', port } } }),
      ).toBe(true)
      expect(await links.servesSsh(running)).toBe(false)
    } finally {
      sshd.close()
    }
  })

  it('says why a pod is in ERROR', async () => {
    const bad = await createPod(s, podBody({ name: 'fails', env: { EXIT_AFTER_MS: '200', EXIT_CODE: '3' } }), alice)
    await waitPod(s, bad.id, 'ERROR', alice)
    const c = (await s.api('GET', `/v2/pods/${bad.id}/connections`, undefined, alice)).body
    expect(c).toEqual({ error: 'the program failed (exit code 3)', http: [], ssh: null })
  })
})
