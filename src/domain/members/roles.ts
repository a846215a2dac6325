import type { Role } from '../../contract/member.js'

export type { Role }
/** The roles a member of an account can have, most powerful first. */
export const ROLES: readonly Role[] = ['owner', 'admin', 'developer', 'billing', 'read-only']

/**
 * What a route needs. `public` and `admin` (the control plane's admin keys) are granted to no role: members
 * never reach admin routes, whatever their role.
 */
export const PERMISSIONS = [
  'public',
  'admin',
  /** Signed in at all: one's own profile, sessions and keys. */
  'self',
  /** The catalog of GPU and CPU types, data centers and public templates. */
  'catalog',
  'workloads.read',
  /** Endpoints, pods, clusters, jobs, templates, volumes, registries, secrets, SSH keys, workers. */
  'workloads.write',
  'billing.read',
  /** The account's overview and quotas. */
  'account.read',
  'members.read',
  /** Invitations, role changes and removals. */
  'members.write',
  'audit.read',
] as const
export type Permission = (typeof PERMISSIONS)[number]

/** What each role is granted: the other half of the route table (src/api/routePermissions.ts). */
export const ROLE_GRANTS: Record<Role, ReadonlySet<Permission>> = {
  owner: new Set<Permission>([
    'self',
    'catalog',
    'workloads.read',
    'workloads.write',
    'billing.read',
    'account.read',
    'members.read',
    'members.write',
    'audit.read',
  ]),
  admin: new Set<Permission>([
    'self',
    'catalog',
    'workloads.read',
    'workloads.write',
    'billing.read',
    'account.read',
    'members.read',
    'members.write',
    'audit.read',
  ]),
  developer: new Set<Permission>([
    'self',
    'catalog',
    'workloads.read',
    'workloads.write',
    'account.read',
    'members.read',
  ]),
  billing: new Set<Permission>(['self', 'catalog', 'billing.read', 'account.read']),
  'read-only': new Set<Permission>([
    'self',
    'catalog',
    'workloads.read',
    'billing.read',
    'account.read',
    'members.read',
  ]),
}

/** Whether `role` is granted `permission`. */
export function grants(role: Role, permission: Permission): boolean {
  return ROLE_GRANTS[role].has(permission)
}

/** Whether `role` can do no more than `limit` (every grant of `role` is one of `limit`'s). */
export function within(role: Role, limit: Role): boolean {
  for (const p of ROLE_GRANTS[role]) if (!ROLE_GRANTS[limit].has(p)) return false
  // Owners and admins hold the same grants; only an owner may hand out ownership.
  return role !== 'owner' || limit === 'owner'
}
