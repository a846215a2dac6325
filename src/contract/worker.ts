import { Type, type Static } from 'typebox'
import { DateTime } from './common.js'

export const WorkerStatus = Type.Enum(['RUNNING', 'IDLE', 'INITIALIZING', 'THROTTLED', 'UNHEALTHY'])
export type WorkerStatus = Static<typeof WorkerStatus>

/** A serverless worker of an endpoint, as listed by GET /v2/serverless/{id}/workers. */
export const Worker = Type.Object({
  id: Type.String(),
  status: WorkerStatus,
  isStale: Type.Boolean({ description: 'runs an older release than the endpoint version' }),
  gpuCount: Type.Integer(),
  version: Type.Union([Type.Integer(), Type.Null()]),
  image: Type.Union([Type.String(), Type.Null()]),
  uptimeSeconds: Type.Union([Type.Integer(), Type.Null()]),
  gpuTypeId: Type.Union([Type.String(), Type.Null()]),
  dataCenterId: Type.Union([Type.String(), Type.Null()]),
  startedAt: Type.Union([DateTime, Type.Null()]),
})
export type Worker = Static<typeof Worker>

export const WorkerList = Type.Object({
  workers: Type.Array(Worker),
  summary: Type.Object({ running: Type.Integer(), idle: Type.Integer(), initializing: Type.Integer(), throttled: Type.Integer(), unhealthy: Type.Integer(), total: Type.Integer() }),
  endpointVersion: Type.Union([Type.Integer(), Type.Null()]),
})
export type WorkerList = Static<typeof WorkerList>
