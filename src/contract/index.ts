/**
 * The public API contract for clients (`import { Endpoint, JobRequest } from 'hangar/contract'`): the
 * TypeBox schemas of request and response bodies, and their static types. Server-only helpers
 * (`Closed`, the container-settings property bags) stay internal.
 */
export { CudaVersion, DateTime, Deleted, Id, IdParams } from './common.js'
export { PortSpec } from './container.js'
export * from './admin.js'
export * from './audit.js'
export * from './billing.js'
export * from './catalog.js'
export * from './cluster.js'
export * from './endpoint.js'
export * from './job.js'
export * from './logs.js'
export * from './metrics.js'
export * from './networkVolume.js'
export * from './openai.js'
export * from './pod.js'
export * from './problem.js'
export * from './registry.js'
export * from './secret.js'
export * from './sshKeys.js'
export * from './template.js'
export * from './worker.js'
export * from './quota.js'
