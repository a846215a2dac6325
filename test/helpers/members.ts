import { expect } from 'vitest'
import type { TestServer } from './server.js'

/** A member made through an invitation: their id, email, password and session token. */
export interface TestMember {
  id: string
  email: string
  password: string
  token: string
}

let n = 0

/** Invites someone with `role` using `inviterKey` (an ALL key stands for the account) and accepts as them. */
export async function addMember(s: TestServer, inviterKey: string, role: string, tag = role): Promise<TestMember> {
  const inv = await s.api('POST', '/v2/invitations', { role }, inviterKey)
  expect(inv.status, JSON.stringify(inv.body)).toBe(201)
  const email = `${tag}-${++n}-${Date.now()}@example.com`
  const password = `correct horse battery ${n}`
  const acc = await s.api('POST', '/v2/invitations/accept', { token: inv.body.token, email, password }, null)
  expect(acc.status, JSON.stringify(acc.body)).toBe(201)
  return { id: acc.body.member.id, email, password, token: acc.body.token }
}
