import { Type, type Static } from 'typebox'

export const EngineConfig = Type.Object(
  {
    address: Type.String({
      pattern: '^(unix|tcp|ssh)://',
      description:
        '`unix:///var/run/docker.sock`, `unix:///run/podman/podman.sock`, `tcp://host:2376` (TLS when `tls` is set), `ssh://user@host`.',
    }),
    tls: Type.Optional(
      Type.Object(
        {
          ca: Type.String({ description: 'CA certificate file (PEM).' }),
          cert: Type.String({ description: 'Client certificate file (PEM).' }),
          key: Type.String({ description: 'Client key file (PEM).' }),
        },
        {
          additionalProperties: false,
          description: 'Client certificate files for `tcp://` with TLS.',
        },
      ),
    ),
    network: Type.Optional(
      Type.Enum(['bridge', 'host'], {
        description:
          "`bridge`: the engine publishes each declared port on a free host port (containers must be able to reach `controlPlaneUrl`/`workerUrl`). `host`: containers share the host's network; each is told a free port to listen on. Default: `host` for this machine's engine (top-level `engine`), `bridge` for `fleet.hosts`.",
      }),
    ),
    gpus: Type.Enum(['nvidia', 'cdi', 'none'], {
      default: 'nvidia',
      description:
        'How GPUs are passed: `nvidia` (DeviceRequests, Docker with the NVIDIA toolkit), `cdi` (CDI device names), `none` (a workload given real GPUs then fails to start). On Podman both go as CDI devices through its own API.',
    }),
    cdiKind: Type.Optional(
      Type.String({
        pattern: '^[a-z0-9.-]+/[a-zA-Z0-9_.-]+$',
        description:
          'CDI kind of the host\'s GPUs with `"gpus": "cdi"` and on Podman (`nvidia.com/gpu`): device `<kind>=<index>`.',
      }),
    ),
    cgroupParent: Type.Optional(
      Type.String({
        minLength: 1,
        description: "cgroup containers are created under (HostConfig.CgroupParent); the engine's default when unset.",
      }),
    ),
    controlPlaneUrl: Type.Optional(
      Type.String({
        pattern: '^https?://',
        description:
          "Base URL containers on this engine reach the control plane at; the control plane's worker URL when unset.",
      }),
    ),
  },
  {
    additionalProperties: false,
    description: "A Docker Engine API (Docker, or Podman's compatible service) and how to run workloads on it.",
  },
)
export type EngineConfig = Static<typeof EngineConfig>

/** An engine as configured: its address alone (`"unix:///run/podman/podman.sock"`) or every setting. */
export const EngineSetting = Type.Union([
  Type.String({
    pattern: '^(unix|tcp|ssh)://',
    description: "The engine's address alone, every other setting at its default.",
  }),
  EngineConfig,
])
export type EngineSetting = Static<typeof EngineSetting>

/** The full settings of an engine, defaults filled in; `network` is the default network where none is set. */
export function engineConfig(
  setting: EngineSetting,
  network: 'bridge' | 'host' = 'bridge',
): EngineConfig & { network: 'bridge' | 'host' } {
  const given: EngineConfig = typeof setting === 'string' ? { address: setting, gpus: 'nvidia' } : setting
  return { ...given, gpus: given.gpus ?? 'nvidia', network: given.network ?? network }
}
