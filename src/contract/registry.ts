import { Type, type Static } from 'typebox'
import { Closed, DateTime, Id } from './common.js'

/** A container registry credential; username and password are write-only. */
export const Registry = Type.Object({ id: Id, name: Type.String() })
export type Registry = Static<typeof Registry>

export const CreateRegistry = Closed({
  name: Type.String({ minLength: 1 }),
  username: Type.String({ minLength: 1 }),
  password: Type.String({ minLength: 1 }),
})
export type CreateRegistry = Static<typeof CreateRegistry>

export const RegistryList = Type.Object({ registries: Type.Array(Registry) })
export type RegistryList = Static<typeof RegistryList>

export const Delegation = Type.Object({
  id: Id,
  name: Type.Union([Type.String(), Type.Null()]),
  delegatorUserId: Type.String(),
  awsUser: Type.String(),
  repository: Type.String(),
  tag: Type.String(),
  awsRegion: Type.String(),
  dockerRegistryUri: Type.String({ description: 'registry login host' }),
  createdAt: DateTime,
})
export type Delegation = Static<typeof Delegation>

export const CreateDelegation = Closed({
  resource: Type.String({
    minLength: 1,
    description: 'container repository ARN, arn:aws:ecr:<region>:<account>:repository/<name>[:<tag>]',
  }),
  name: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Null()])),
})
export type CreateDelegation = Static<typeof CreateDelegation>

export const DelegationList = Type.Object({ delegations: Type.Array(Delegation) })
