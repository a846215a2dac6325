import type { Permission } from '../domain/members/roles.js'

/**
 * What each route needs of a member: the one table of route permissions (issue 36, item 3). A member (a
 * session or a member's key) may call a route when its role is granted the route's permission
 * (`ROLE_GRANTS` in domain/members/roles.ts); auth.ts enforces it for every request, and
 * test/members.permissions.test.ts walks every cell of it against a real server.
 *
 * Keyed by `METHOD /url` as registered. Routes answered without a key (`access: 'public'`: the worker
 * protocol, probes, the console's files, the pod proxy which checks its own links and keys) are left out;
 * a route missing here refuses every member (see `permissionOf`), so a new route is closed until it is listed.
 * The account's API keys (ALL, READ_ONLY, RESTRICTED) keep their own rules in auth.ts, unchanged.
 */
export const ROUTE_PERMISSIONS: Readonly<Record<string, Permission>> = {
  // Members, sessions and invitations
  'POST /v2/sessions': 'public',
  'GET /v2/sessions/oidc': 'public',
  'POST /v2/sessions/oidc': 'public',
  'GET /v2/sessions/oidc/callback': 'public',
  'POST /v2/sessions/oidc/link': 'self',
  'DELETE /v2/sessions/current': 'self',
  'GET /v2/me': 'self',
  'PUT /v2/me/password': 'self',
  'GET /v2/me/keys': 'self',
  'POST /v2/me/keys': 'self',
  'POST /v2/me/keys/:id/revoke': 'self',
  'GET /v2/members': 'members.read',
  'PATCH /v2/members/:id': 'members.write',
  'DELETE /v2/members/:id': 'members.write',
  'GET /v2/invitations': 'members.read',
  'POST /v2/invitations': 'members.write',
  'DELETE /v2/invitations/:id': 'members.write',
  'POST /v2/invitations/preview': 'public',
  'POST /v2/invitations/accept': 'public',

  // The control plane's admin routes: admin keys only, never a member
  'GET /v2/admin/accounts': 'admin',
  'POST /v2/admin/accounts': 'admin',
  'GET /v2/admin/accounts/:id/quotas': 'admin',
  'PUT /v2/admin/accounts/:id/quotas': 'admin',
  'DELETE /v2/admin/accounts/:id/quotas': 'admin',
  'GET /v2/admin/billing/accounts': 'admin',
  'GET /v2/admin/keys': 'admin',
  'POST /v2/admin/keys': 'admin',
  'POST /v2/admin/keys/:id/revoke': 'admin',
  'GET /v2/admin/quotas': 'admin',

  // The account
  'GET /v2/account/overview': 'account.read',
  'GET /v2/account/quotas': 'account.read',
  'GET /v2/account/ssh-keys': 'workloads.read',
  'PUT /v2/account/ssh-keys': 'workloads.write',
  'GET /v2/audit': 'audit.read',

  // Billing
  'GET /v2/billing': 'billing.read',
  'GET /v2/billing/clusters': 'billing.read',
  'GET /v2/billing/endpoints': 'billing.read',
  'GET /v2/billing/network-volumes': 'billing.read',
  'GET /v2/billing/pods': 'billing.read',
  'GET /v2/billing/serverless': 'billing.read',

  // The catalog
  'GET /v2/catalog/cpus': 'catalog',
  'GET /v2/catalog/cpus/:id': 'catalog',
  'GET /v2/catalog/datacenters': 'catalog',
  'GET /v2/catalog/datacenters/:id': 'catalog',
  'GET /v2/catalog/gpus': 'catalog',
  'GET /v2/catalog/gpus/:id': 'catalog',
  'GET /v2/catalog/templates': 'catalog',

  // Workloads and what they use
  'GET /v2/clusters': 'workloads.read',
  'POST /v2/clusters': 'workloads.write',
  'GET /v2/clusters/:id': 'workloads.read',
  'PATCH /v2/clusters/:id': 'workloads.write',
  'DELETE /v2/clusters/:id': 'workloads.write',
  'GET /v2/clusters/:id/pods': 'workloads.read',
  'GET /v2/network-volumes': 'workloads.read',
  'POST /v2/network-volumes': 'workloads.write',
  'GET /v2/network-volumes/:id': 'workloads.read',
  'PATCH /v2/network-volumes/:id': 'workloads.write',
  'DELETE /v2/network-volumes/:id': 'workloads.write',
  'GET /v2/pods': 'workloads.read',
  'POST /v2/pods': 'workloads.write',
  'GET /v2/pods/:id': 'workloads.read',
  'PATCH /v2/pods/:id': 'workloads.write',
  'DELETE /v2/pods/:id': 'workloads.write',
  'POST /v2/pods/:id/action': 'workloads.write',
  'GET /v2/pods/:id/connections': 'workloads.read',
  'GET /v2/pods/:id/logs': 'workloads.read',
  'GET /v2/registries': 'workloads.read',
  'POST /v2/registries': 'workloads.write',
  'GET /v2/registries/:id': 'workloads.read',
  'DELETE /v2/registries/:id': 'workloads.write',
  'GET /v2/registries/delegations': 'workloads.read',
  'POST /v2/registries/delegations': 'workloads.write',
  'DELETE /v2/registries/delegations/:id': 'workloads.write',
  'GET /v2/secrets': 'workloads.read',
  'POST /v2/secrets': 'workloads.write',
  'GET /v2/secrets/:id': 'workloads.read',
  'PATCH /v2/secrets/:id': 'workloads.write',
  'DELETE /v2/secrets/:id': 'workloads.write',
  'GET /v2/serverless': 'workloads.read',
  'POST /v2/serverless': 'workloads.write',
  'GET /v2/serverless/:id': 'workloads.read',
  'PATCH /v2/serverless/:id': 'workloads.write',
  'DELETE /v2/serverless/:id': 'workloads.write',
  'GET /v2/serverless/:id/metrics': 'workloads.read',
  'GET /v2/serverless/:id/releases': 'workloads.read',
  'POST /v2/serverless/:id/webhook-secret/rotate': 'workloads.write',
  'GET /v2/serverless/:id/workers': 'workloads.read',
  'GET /v2/serverless/:id/workers/:workerId/logs': 'workloads.read',
  'GET /v2/templates': 'workloads.read',
  'POST /v2/templates': 'workloads.write',
  'GET /v2/templates/:id': 'workloads.read',
  'PATCH /v2/templates/:id': 'workloads.write',
  'DELETE /v2/templates/:id': 'workloads.write',

  // Jobs of queue endpoints
  'POST /v2/:endpointId/run': 'workloads.write',
  'POST /v2/:endpointId/runsync': 'workloads.write',
  'POST /v2/:endpointId/cancel/:jobId': 'workloads.write',
  'POST /v2/:endpointId/retry/:jobId': 'workloads.write',
  'POST /v2/:endpointId/purge-queue': 'workloads.write',
  'POST /v2/:endpointId/openai/*': 'workloads.write',
  'GET /v2/:endpointId/openai/v1/models': 'workloads.read',
  'GET /v2/:endpointId/health': 'workloads.read',
  'GET /v2/:endpointId/requests': 'workloads.read',
  'GET /v2/:endpointId/status/:jobId': 'workloads.read',
  'GET /v2/:endpointId/status-sync/:jobId': 'workloads.read',
  'GET /v2/:endpointId/stream/:jobId': 'workloads.read',

  // Load-balancer traffic runs the workload whatever the method
  ...Object.fromEntries(
    ['DELETE', 'GET', 'OPTIONS', 'PATCH', 'POST', 'PUT'].flatMap((m) => [
      [`${m} /lb/:endpointId`, 'workloads.write'],
      [`${m} /lb/:endpointId/*`, 'workloads.write'],
    ]),
  ),
}

/** The permission a member needs for a route; undefined (refused to every member) when the table lacks it. */
export function permissionOf(method: string, url: string): Permission | undefined {
  return ROUTE_PERMISSIONS[`${method === 'HEAD' ? 'GET' : method} ${url}`]
}
