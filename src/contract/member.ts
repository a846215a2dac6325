import { Type, type Static } from 'typebox'
import { Closed, DateTime } from './common.js'

/** A member's role in an account; see docs/teams.md for what each may do. */
export const Role = Type.Union(
  [
    Type.Literal('owner'),
    Type.Literal('admin'),
    Type.Literal('developer'),
    Type.Literal('billing'),
    Type.Literal('read-only'),
  ],
  {
    description:
      'owner and admin: everything in the account (only an owner makes or changes owners); developer: endpoints, pods, jobs and what they use; billing: billing only; read-only: reads',
  },
)
export type Role = Static<typeof Role>

const Email = Type.String({ minLength: 3, maxLength: 254, pattern: '^[^@\\s]+@[^@\\s]+$' })
const Password = Type.String({ minLength: 12, maxLength: 1024, description: '12 to 1024 characters' })

export const Member = Type.Object({
  id: Type.String(),
  accountId: Type.String(),
  email: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  role: Role,
  createdAt: DateTime,
  updatedAt: DateTime,
})
export type Member = Static<typeof Member>

export const MemberList = Type.Object({ members: Type.Array(Member) })
export type MemberList = Static<typeof MemberList>

export const UpdateMember = Closed({ role: Role })
export type UpdateMember = Static<typeof UpdateMember>

export const SignIn = Closed({ email: Email, password: Type.String({ minLength: 1, maxLength: 1024 }) })
export type SignIn = Static<typeof SignIn>

/** A new session: `token` is shown once; send it as `Authorization: Bearer <token>`. */
export const CreatedSession = Type.Object({
  token: Type.String({ description: 'shown once; send as Authorization: Bearer <token>' }),
  expiresAt: DateTime,
  member: Member,
})
export type CreatedSession = Static<typeof CreatedSession>

/** Who is calling: a member (session or member key) or an API key. */
export const Me = Type.Object({
  kind: Type.Union([Type.Literal('member'), Type.Literal('key')]),
  accountId: Type.String(),
  member: Type.Union([Member, Type.Null()]),
  /** The permissions this caller holds (a member key's are at most its member's). */
  permissions: Type.Array(Type.String()),
  admin: Type.Boolean({ description: 'a control plane admin key (the /v2/admin routes)' }),
})
export type Me = Static<typeof Me>

export const ChangePassword = Closed({ currentPassword: Type.String({ maxLength: 1024 }), newPassword: Password })
export type ChangePassword = Static<typeof ChangePassword>

export const MemberKey = Type.Object({
  id: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  role: Role,
  prefix: Type.String(),
  createdAt: DateTime,
  expiresAt: Type.Union([DateTime, Type.Null()]),
  revokedAt: Type.Union([DateTime, Type.Null()]),
})
export type MemberKey = Static<typeof MemberKey>
export const CreatedMemberKey = Type.Intersect([MemberKey, Type.Object({ key: Type.String() })])
export type CreatedMemberKey = Static<typeof CreatedMemberKey>
export const MemberKeyList = Type.Object({ keys: Type.Array(MemberKey) })
export type MemberKeyList = Static<typeof MemberKeyList>

export const CreateMemberKey = Closed({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  role: Type.Optional(
    Type.Union([Role], { description: "at most the member's own role; the member's role when absent" }),
  ),
  expiresAt: Type.Optional(DateTime),
})
export type CreateMemberKey = Static<typeof CreateMemberKey>

export const Invitation = Type.Object({
  id: Type.String(),
  accountId: Type.String(),
  role: Role,
  createdBy: Type.String({ description: "the inviting member's or key's id" }),
  createdAt: DateTime,
  expiresAt: DateTime,
  acceptedAt: Type.Union([DateTime, Type.Null()]),
  memberId: Type.Union([Type.String(), Type.Null()]),
  revokedAt: Type.Union([DateTime, Type.Null()]),
})
export type Invitation = Static<typeof Invitation>
export const InvitationList = Type.Object({ invitations: Type.Array(Invitation) })
export type InvitationList = Static<typeof InvitationList>

export const CreateInvitation = Closed({
  role: Role,
  expiresInHours: Type.Optional(Type.Integer({ minimum: 1, maximum: 720, default: 72 })),
  account: Type.Optional(
    Type.String({ minLength: 1, description: 'admin keys only: the account (id or name) to invite to' }),
  ),
})
export type CreateInvitation = Static<typeof CreateInvitation>

/** A new invitation: its token and link are shown once. */
export const CreatedInvitation = Type.Intersect([
  Invitation,
  Type.Object({
    token: Type.String({ description: 'shown once' }),
    url: Type.String({ description: "the console's page where the invitee sets a password" }),
  }),
])
export type CreatedInvitation = Static<typeof CreatedInvitation>

export const InvitationToken = Closed({ token: Type.String({ minLength: 1, maxLength: 256 }) })
export type InvitationToken = Static<typeof InvitationToken>

/** What an invitee sees before accepting. */
export const InvitationPreview = Type.Object({ accountName: Type.String(), role: Role, expiresAt: DateTime })
export type InvitationPreview = Static<typeof InvitationPreview>

export const AcceptInvitation = Closed({
  token: Type.String({ minLength: 1, maxLength: 256 }),
  email: Email,
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  password: Password,
})
export type AcceptInvitation = Static<typeof AcceptInvitation>

/** The OpenID Connect provider members may sign in with, if one is configured. */
export const OidcProvider = Type.Object({
  provider: Type.Union(
    [Type.Object({ name: Type.String({ description: 'shown as "Sign in with <name>"' }) }), Type.Null()],
    {
      description: 'null when no provider is configured (members sign in with a password only)',
    },
  ),
})
export type OidcProvider = Static<typeof OidcProvider>

/** Starts a sign-in with the provider; with `invitation` (an invitation's token), signing in accepts it. */
export const StartOidcSignIn = Closed({ invitation: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })) })
export type StartOidcSignIn = Static<typeof StartOidcSignIn>

/** Where to send the browser; the flow itself is in the cookie set with this answer. */
export const StartedOidcSignIn = Type.Object({
  authorizationUrl: Type.String({ description: "the provider's authorization URL, with state, nonce and PKCE" }),
})
export type StartedOidcSignIn = Static<typeof StartedOidcSignIn>

/** The callback's query, as the provider sends it (checked by the flow, not here). */
export const OidcCallbackQuery = Type.Object({
  code: Type.Optional(Type.String({ maxLength: 4096 })),
  state: Type.Optional(Type.String({ maxLength: 1024 })),
  iss: Type.Optional(Type.String({ maxLength: 2048 })),
  error: Type.Optional(Type.String({ maxLength: 256 })),
  error_description: Type.Optional(Type.String({ maxLength: 2048 })),
})
export type OidcCallbackQuery = Static<typeof OidcCallbackQuery>
