import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Deleted, IdParams } from '../../contract/common.js'
import {
  AcceptInvitation,
  ChangePassword,
  CreatedInvitation,
  CreatedMemberKey,
  CreatedSession,
  CreateInvitation,
  CreateMemberKey,
  InvitationList,
  InvitationPreview,
  InvitationToken,
  Me,
  Member,
  MemberKey,
  MemberKeyList,
  MemberList,
  SignIn,
  UpdateMember,
} from '../../contract/member.js'
import type { AppDeps } from '../app.js'

const tags = ['members']
const pub = { access: 'public' as const }

/**
 * Members of the account and their roles (issue 36, item 3): sign-in and sessions, one's own keys, members
 * and invitations. What each role may call is the route table of routePermissions.ts, enforced in auth.ts.
 */
export const memberRoutes =
  ({ accounts, publicUrl, signIns }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    const members = accounts.members
    const throttle = signIns?.throttle
    app.post(
      '/v2/sessions',
      {
        schema: {
          tags,
          summary: 'Sign in with email and password (Hangar extension)',
          description:
            'Answers a new session token, valid 12 hours; send it as `Authorization: Bearer <token>`. A wrong email and a wrong password get the same 401. Failed sign-ins are limited per email and per client address (`members.signInLimits`: 10 per email and 30 per address in 15 minutes by default); past a limit the answer is 429 with Retry-After, whatever the password.',
          body: SignIn,
          response: { 201: CreatedSession },
        },
        config: { ...pub, audit: { action: 'member.sign-in', resourceType: 'session' } },
      },
      async (req, reply) => {
        const signIn = () =>
          members.signIn(req.body.email, req.body.password, {
            ip: req.ip ?? null,
            // A wrong password for a known member is recorded in the audit log as that member's refused sign-in.
            onRefusedMember: (p) => {
              req.principal = p
            },
          })
        const { session, principal } = throttle
          ? await throttle.guard(req.body.email, req.ip ?? null, signIn)
          : await signIn()
        req.principal = principal
        return reply.code(201).send(session)
      },
    )
    app.delete(
      '/v2/sessions/current',
      {
        schema: { tags, summary: 'Sign out: ends the session presented', response: { 204: Deleted } },
        config: { audit: { action: 'member.sign-out', resourceType: 'session' } },
      },
      async (req, reply) => {
        await members.signOut(req.principal)
        return reply.code(204).send(null)
      },
    )
    app.get(
      '/v2/me',
      { schema: { tags, summary: 'Who is calling, with which role and permissions', response: { 200: Me } } },
      async (req) => members.me(req.principal),
    )
    app.put(
      '/v2/me/password',
      {
        schema: {
          tags,
          summary: "Change one's password (ends one's other sessions)",
          body: ChangePassword,
          response: { 204: Deleted },
        },
        config: { audit: { action: 'member.password.set', resourceType: 'member' } },
      },
      async (req, reply) => {
        await members.changePassword(req.principal, req.body.currentPassword, req.body.newPassword)
        return reply.code(204).send(null)
      },
    )
    app.get(
      '/v2/me/keys',
      { schema: { tags, summary: "The calling member's own API keys", response: { 200: MemberKeyList } } },
      async (req) => ({ keys: await members.listKeys(req.principal) }),
    )
    app.post(
      '/v2/me/keys',
      {
        schema: {
          tags,
          summary: 'Issue an API key of ones own, carrying at most ones role',
          description: "The key is shown once. A role beyond the caller's own is refused with 403.",
          body: CreateMemberKey,
          response: { 201: CreatedMemberKey },
        },
        config: { audit: { action: 'key.issue', resourceType: 'key' } },
      },
      async (req, reply) => reply.code(201).send(await members.createKey(req.principal, req.body)),
    )
    app.post(
      '/v2/me/keys/:id/revoke',
      {
        schema: { tags, summary: 'Revoke one of ones own keys', params: IdParams, response: { 200: MemberKey } },
        config: { audit: { action: 'key.revoke', resourceType: 'key' } },
      },
      async (req) => members.revokeKey(req.principal, req.params.id),
    )
    app.get(
      '/v2/members',
      { schema: { tags, summary: "The account's members", response: { 200: MemberList } } },
      async (req) => ({ members: await members.list(req.principal) }),
    )
    app.patch(
      '/v2/members/:id',
      {
        schema: {
          tags,
          summary: "Change a member's role",
          description:
            'Nobody changes their own role; only an owner makes or changes an owner; the last owner stays one.',
          params: IdParams,
          body: UpdateMember,
          response: { 200: Member },
        },
        config: { audit: { action: 'member.role.set', resourceType: 'member' } },
      },
      async (req) => members.setRole(req.principal, req.params.id, req.body.role),
    )
    app.delete(
      '/v2/members/:id',
      {
        schema: {
          tags,
          summary: 'Remove a member (their sessions and keys end at once)',
          params: IdParams,
          response: { 204: Deleted },
        },
      },
      async (req, reply) => {
        await members.remove(req.principal, req.params.id)
        return reply.code(204).send(null)
      },
    )
    app.get(
      '/v2/invitations',
      { schema: { tags, summary: "The account's invitations", response: { 200: InvitationList } } },
      async (req) => ({ invitations: await members.invitations(req.principal) }),
    )
    app.post(
      '/v2/invitations',
      {
        schema: {
          tags,
          summary: 'Invite someone by link, with a role',
          description:
            "The link is single use and expires (72 hours unless `expiresInHours` says otherwise); token and link are shown once. The role is at most the inviter's; only owners invite owners.",
          body: CreateInvitation,
          response: { 201: CreatedInvitation },
        },
      },
      async (req, reply) => {
        const created = await members.invite(req.principal, req.body)
        // The link the invitee opens: the console's page, on the address clients use.
        return reply.code(201).send({ ...created, url: publicUrl() + created.url })
      },
    )
    app.delete(
      '/v2/invitations/:id',
      { schema: { tags, summary: 'Revoke an open invitation', params: IdParams, response: { 204: Deleted } } },
      async (req, reply) => {
        await members.revokeInvitation(req.principal, req.params.id)
        return reply.code(204).send(null)
      },
    )
    app.post(
      '/v2/invitations/preview',
      {
        schema: {
          tags,
          summary: 'What an invitation offers (its account and role), without accepting it',
          body: InvitationToken,
          response: { 200: InvitationPreview },
        },
        config: { ...pub, audit: false },
      },
      async (req) => members.preview(req.body.token),
    )
    app.post(
      '/v2/invitations/accept',
      {
        schema: {
          tags,
          summary: 'Accept an invitation: become a member with the password given, signed in',
          description:
            "Once per invitation; a used, revoked or expired one is 404. An email that is already a member's is 409, and such refusals count against the client address's limit of failed sign-ins (429 past it).",
          body: AcceptInvitation,
          response: { 201: CreatedSession },
        },
        config: { ...pub, audit: { action: 'invitation.accept', resourceType: 'invitation' } },
      },
      async (req, reply) => {
        // "Already a member's" tells whether an email is a member's: such refusals count against the address like
        // failed sign-ins, so a link cannot be used to test a list of emails faster than passwords are guessed.
        const accept = () => members.accept(req.body, req.ip ?? null)
        const { session, principal } = throttle
          ? await throttle.guardInvitation(req.ip ?? null, accept)
          : await accept()
        req.principal = principal
        return reply.code(201).send(session)
      },
    )
  }
