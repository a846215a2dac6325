import { readFileSync } from 'node:fs'
import type { Command } from 'commander'
import { loadClientConfig } from '../../config.js'
import type { Invitation, Member, MemberKey, Role } from '../../contract/member.js'
import { ROLES } from '../../domain/members/roles.js'
import { clientCommand, clientFor, type ClientOptions } from '../clientCommand.js'
import { UsageError } from '../exitCodes.js'
import { HangarClient } from '../HangarClient.js'
import { print, type Column } from '../output.js'

const memberColumns: Column<Member>[] = [
  { header: 'email', value: (m) => m.email },
  { header: 'role', value: (m) => m.role },
  { header: 'name', value: (m) => m.name },
  { header: 'id', value: (m) => m.id },
  { header: 'since', value: (m) => m.createdAt },
]
const invitationColumns: Column<Invitation>[] = [
  { header: 'id', value: (i) => i.id },
  { header: 'role', value: (i) => i.role },
  { header: 'expires', value: (i) => i.expiresAt },
  { header: 'state', value: (i) => (i.acceptedAt ? `accepted by ${i.memberId}` : i.revokedAt ? 'revoked' : 'open') },
]
const keyColumns: Column<MemberKey>[] = [
  { header: 'id', value: (k) => k.id },
  { header: 'prefix', value: (k) => k.prefix },
  { header: 'role', value: (k) => k.role },
  { header: 'name', value: (k) => k.name },
  { header: 'revoked', value: (k) => k.revokedAt },
]

function role(value: string): Role {
  if (!(ROLES as readonly string[]).includes(value))
    throw new UsageError(`role: ${JSON.stringify(value)} is not one of ${ROLES.join(', ')}`)
  return value as Role
}

/** A password from stdin (one trailing newline dropped): never a flag, which the process list would show. */
function passwordFromStdin(): string {
  const password = readFileSync(0, 'utf8').replace(/\r?\n$/, '')
  if (!password) throw new UsageError('give the password on stdin (e.g. `hangar members sign-in ... < file`)')
  return password
}

/** A client for the public routes (sign-in, accepting an invitation): they need no key. */
function anonymous(opts: ClientOptions): HangarClient {
  return new HangarClient(loadClientConfig({ url: opts.url, dataDir: opts.dataDir }).url, 'none')
}

/** `hangar members`: people of your account with roles, invitations by link, sign-in and members' own keys. */
export function registerMembers(program: Command): void {
  const group = program
    .command('members')
    .description(`members of your account and their roles (${ROLES.join(', ')}); invitations; sign-in`)
  clientCommand(group, 'list', "list your account's members").action(async (opts: ClientOptions) => {
    const list = await clientFor(opts).listMembers()
    print(opts, list, { rows: list, columns: memberColumns })
  })
  clientCommand(group, 'set-role <memberId> <role>', "change a member's role (only owners touch owners)").action(
    async (id: string, r: string, opts: ClientOptions) => print(opts, await clientFor(opts).setMemberRole(id, role(r))),
  )
  clientCommand(group, 'remove <memberId>', 'remove a member; their sessions and keys stop at once').action(
    async (id: string, opts: ClientOptions) => {
      await clientFor(opts).removeMember(id)
      print(opts, { removed: id }, () => `removed ${id}`)
    },
  )
  clientCommand(group, 'invite', 'invite someone by a single-use link (shown once)')
    .requiredOption('--role <role>', `the role they get: ${ROLES.join(', ')}`)
    .option('--expires-in-hours <n>', 'how long the link works (default 72, at most 720)', (v) => Number(v))
    .option('--account <account>', 'admin keys only: the account to invite to')
    .action(async (opts: ClientOptions & { role: string; expiresInHours?: number; account?: string }) => {
      const inv = await clientFor(opts).invite({
        role: role(opts.role),
        ...(opts.expiresInHours ? { expiresInHours: opts.expiresInHours } : {}),
        ...(opts.account ? { account: opts.account } : {}),
      })
      print(opts, inv, () => `invitation ${inv.id} (${inv.role}, until ${inv.expiresAt}); send this link:\n${inv.url}`)
    })
  clientCommand(group, 'invitations', "list your account's invitations").action(async (opts: ClientOptions) => {
    const list = await clientFor(opts).listInvitations()
    print(opts, list, { rows: list, columns: invitationColumns })
  })
  clientCommand(group, 'revoke-invitation <invitationId>', 'revoke an open invitation').action(
    async (id: string, opts: ClientOptions) => {
      await clientFor(opts).revokeInvitation(id)
      print(opts, { revoked: id }, () => `revoked ${id}`)
    },
  )
  clientCommand(
    group,
    'sign-in <email>',
    'sign in (password on stdin); prints a session token for HANGAR_API_KEY',
  ).action(async (email: string, opts: ClientOptions) => {
    const s = await anonymous(opts).signIn(email, passwordFromStdin())
    print(opts, s, () => `${s.token}\n(signed in as ${s.member.email}, ${s.member.role}, until ${s.expiresAt})`)
  })
  clientCommand(group, 'sign-out', 'end the session given as --api-key / HANGAR_API_KEY').action(
    async (opts: ClientOptions) => {
      await clientFor(opts).signOut()
      print(opts, { signedOut: true }, () => 'signed out')
    },
  )
  clientCommand(group, 'me', 'who you are signed in as, with your permissions').action(async (opts: ClientOptions) =>
    print(opts, await clientFor(opts).me()),
  )
  clientCommand(group, 'keys', 'your own API keys').action(async (opts: ClientOptions) => {
    const list = await clientFor(opts).listMemberKeys()
    print(opts, list, { rows: list, columns: keyColumns })
  })
  clientCommand(group, 'create-key', 'issue an API key of your own, carrying at most your role (shown once)')
    .option('--role <role>', 'a narrower role than yours')
    .option('--name <name>', 'what it is for')
    .action(async (opts: ClientOptions & { role?: string; name?: string }) => {
      const k = await clientFor(opts).createMemberKey({
        ...(opts.role ? { role: role(opts.role) } : {}),
        ...(opts.name ? { name: opts.name } : {}),
      })
      print(opts, k, () => `${k.key}\n(${k.role}; shown once)`)
    })
  clientCommand(group, 'revoke-key <keyId>', 'revoke one of your keys').action(
    async (id: string, opts: ClientOptions) => print(opts, await clientFor(opts).revokeMemberKey(id)),
  )
}
