import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROLE_GRANTS, ROLES, type Role } from '../src/domain/members/roles.js'
import { ROUTE_PERMISSIONS } from '../src/api/routePermissions.js'
import { addMember, type TestMember } from './helpers/members.js'
import { startTestServer, type TestServer } from './helpers/server.js'

/** A concrete request for a route pattern: made-up ids (answered 404 where the role may call it), `{}` bodies. */
function requestOf(route: string): { method: string; path: string; body?: string } {
  const [method, url] = route.split(' ')
  const path = url.replace(/:[A-Za-z]+/g, 'no-such-id').replace(/\*$/, 'x')
  return { method, path, body: ['POST', 'PUT', 'PATCH'].includes(method) ? '{}' : undefined }
}

/** How auth.ts words a refusal for want of permission (a member's, or a non-admin key on an admin route). */
const REFUSAL = /needs the [a-z.]+ permission|is not open to members|needs an admin key/

describe('the route table of members (every route × every role, against a real server)', () => {
  let s: TestServer
  const members = {} as Record<Role, TestMember>

  beforeAll(async () => {
    s = await startTestServer()
    const accountKey = await s.accountKey('perm-team')
    for (const role of ROLES) members[role] = await addMember(s, accountKey, role)
  })
  afterAll(async () => {
    await s?.stop()
  })

  const send = async (route: string, token: string) => {
    const { method, path, body } = requestOf(route)
    const res = await fetch(s.url + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body,
      signal: AbortSignal.timeout(10_000),
    })
    const text = await res.text()
    return { status: res.status, detail: text.startsWith('{') ? (JSON.parse(text).detail as string) : text }
  }

  it('lists every route that asks for a key: a route missing from the table would be closed to members', async () => {
    const seen = new Set<string>()
    const missing: string[] = []
    for (const r of s.hangar.app.hangarRoutes) {
      const route = `${r.method} ${r.url}`
      if (seen.has(route) || !/^\/(v2|lb)\//.test(r.url) || ROUTE_PERMISSIONS[route]) continue
      seen.add(route)
      const { method, path, body } = requestOf(route)
      const res = await fetch(s.url + path, {
        method,
        headers: body ? { 'content-type': 'application/json' } : {},
        body,
        signal: AbortSignal.timeout(10_000),
      })
      const text = await res.text()
      // The auth hook's own answer: the route wants an account's key, so the table must say what members need.
      if (res.status === 401 && text.includes('missing API key')) missing.push(route)
    }
    expect(missing).toEqual([])
  })

  // The sign-out ends the session it is sent with: walked last, below.
  const cells = Object.entries(ROUTE_PERMISSIONS).filter(([route]) => route !== 'DELETE /v2/sessions/current')

  for (const role of ROLES) {
    it(`${role}: allowed exactly where ${role} is granted the route's permission (${cells.length} routes)`, async () => {
      const wrong: string[] = []
      for (const [route, permission] of cells) {
        const { status, detail } = await send(route, members[role].token)
        const allowed = permission === 'public' || ROLE_GRANTS[role].has(permission)
        // Job operations answer a refusal with 401, as the spec has it; every refusal says what was missing.
        const refused = (status === 403 || status === 401) && REFUSAL.test(detail)
        if (allowed && (refused || status === 401)) wrong.push(`${route}: ${status} though ${role} holds ${permission}`)
        else if (!allowed && !refused) wrong.push(`${route}: ${status} though ${role} lacks ${permission}: ${detail}`)
        else if (!allowed && permission !== 'admin' && !detail.includes(permission))
          wrong.push(`${route}: the refusal does not name ${permission}: ${detail}`)
      }
      expect(wrong).toEqual([])
    })
  }

  it('control: every refused cell is a request that passes for a role granted it (or an admin key)', async () => {
    const unanswered: string[] = []
    for (const [route, permission] of cells) {
      if (permission === 'public') continue
      const holder = ROLES.find((r) => ROLE_GRANTS[r].has(permission))
      const { status, detail } = await send(route, holder ? members[holder].token : s.adminKey)
      if ((status === 401 || status === 403) && REFUSAL.test(detail))
        unanswered.push(`${route} (${holder ?? 'admin key'}): ${status} ${detail}`)
    }
    expect(unanswered).toEqual([])
  })

  it('sign-out, the last cell: every role may end its own session, which then stops working', async () => {
    for (const role of ROLES) {
      const token = members[role].token
      expect((await send('DELETE /v2/sessions/current', token)).status).toBe(204)
      expect((await send('GET /v2/me', token)).status).toBe(401)
    }
  })
})
