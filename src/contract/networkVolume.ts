import { Type, type Static } from 'typebox'
import { NetworkVolumeType } from './catalog.js'
import { Closed, Id } from './common.js'

export const NetworkVolume = Type.Object({
  id: Id,
  name: Type.String(),
  size: Type.Integer({ description: 'GB' }),
  dataCenter: Type.String(),
  type: NetworkVolumeType,
})
export type NetworkVolume = Static<typeof NetworkVolume>

const Size = Type.Integer({ minimum: 10, maximum: 4096, description: 'GB' })

export const CreateNetworkVolume = Closed({
  name: Type.String({ minLength: 1 }),
  size: Size,
  dataCenter: Type.String({ minLength: 1 }),
  type: Type.Optional(NetworkVolumeType),
})
export type CreateNetworkVolume = Static<typeof CreateNetworkVolume>

export const UpdateNetworkVolume = Closed(
  { name: Type.Optional(Type.String({ minLength: 1 })), size: Type.Optional(Size) },
  { minProperties: 1 },
)
export type UpdateNetworkVolume = Static<typeof UpdateNetworkVolume>

export const NetworkVolumeList = Type.Object({ networkVolumes: Type.Array(NetworkVolume) })
export type NetworkVolumeList = Static<typeof NetworkVolumeList>
