import { Type, type Static } from 'typebox'

/** How many failed password sign-ins are allowed before `POST /v2/sessions` answers 429 (see SignInThrottle). */
export const SignInLimitsConfig = Type.Object(
  {
    failuresPerEmail: Type.Integer({
      minimum: 1,
      default: 10,
      description:
        "Failed sign-ins with one email per window, from anywhere; then that email is refused (429) until the window ends, whatever the password. Bounds guessing one member's password from many addresses.",
    }),
    failuresPerIp: Type.Integer({
      minimum: 1,
      default: 30,
      description:
        "Failed sign-ins from one client address per window, whatever the email (higher than per email: an office behind one NAT address shares it). Also counts invitations refused because their email is already a member's.",
    }),
    windowMinutes: Type.Integer({
      minimum: 1,
      maximum: 1440,
      default: 15,
      description: 'The window failures are counted in, minutes (fixed windows, shared through `redisUrl`).',
    }),
  },
  {
    additionalProperties: false,
    default: {},
    description:
      "Limits on failed password sign-ins, counted with the rate limits' counters (shared by replicas through `redisUrl`).",
  },
)
export type SignInLimitsConfig = Static<typeof SignInLimitsConfig>

/** An OpenID Connect provider members may sign in with (authorization code flow with PKCE). */
export const OidcConfig = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 60,
      description: 'The provider\'s name on the console\'s button: "Sign in with <name>".',
    }),
    issuer: Type.String({
      pattern: '^https?://',
      description:
        'The issuer URL; its `/.well-known/openid-configuration` is read at the first sign-in. `http://` only on a loopback address (127.0.0.1, ::1, localhost).',
    }),
    clientId: Type.String({ minLength: 1, description: "Hangar's client id at the provider." }),
    clientSecret: Type.String({
      minLength: 1,
      description: "Hangar's client secret at the provider (sent with client_secret_basic).",
    }),
    redirectUrl: Type.Optional(
      Type.String({
        pattern: '^https?://',
        description:
          'The redirect URL registered at the provider; `<publicUrl>/v2/sessions/oidc/callback` when unset. It must reach this route.',
      }),
    ),
    emailClaim: Type.String({
      minLength: 1,
      default: 'email',
      description: "The ID token's claim that carries the person's email, matched against members' emails.",
    }),
    requireVerifiedEmail: Type.Boolean({
      default: true,
      description:
        'Refuse an ID token unless its `email_verified` claim is true. Turn off only for a provider whose emails are all its own to give (a company directory): anyone able to set an unverified email there could otherwise sign in as that member.',
    }),
    scopes: Type.String({
      default: 'openid email profile',
      description: 'The scopes asked for (space separated; `openid` is required).',
    }),
  },
  {
    additionalProperties: false,
    description:
      "Sign-in with an OpenID Connect provider (see docs/members-and-roles.md). Only people who are already members (by email) or who hold an invitation get in; no member is ever made from a provider's login alone.",
  },
)
export type OidcConfig = Static<typeof OidcConfig>

export const MembersConfig = Type.Object(
  {
    signInLimits: SignInLimitsConfig,
    oidc: Type.Optional(OidcConfig),
  },
  {
    additionalProperties: false,
    default: {},
    description: 'How members sign in: limits on failed password sign-ins, and an optional OpenID Connect provider.',
  },
)
export type MembersConfig = Static<typeof MembersConfig>
