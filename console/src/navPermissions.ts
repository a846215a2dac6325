/**
 * The permission a member needs to use each page of the navigation (the route table's, docs/members-and-roles.md):
 * a page the caller's role cannot read is left out of the navigation. Pages not named are shown to everyone.
 */
export const NAV_PERMISSIONS: Record<string, string> = {
  '/console/endpoints': 'workloads.read',
  '/console/pods': 'workloads.read',
  '/console/volumes': 'workloads.read',
  '/console/templates': 'workloads.read',
  '/console/registries': 'workloads.read',
  '/console/ssh-keys': 'workloads.read',
  '/console/secrets': 'workloads.read',
  '/console/audit': 'audit.read',
  '/console/billing': 'billing.read',
  '/console/quotas': 'account.read',
  '/console/members': 'members.read',
}
