import type Docker from 'dockerode'

/**
 * Creates a container through Podman's own API (`POST /v4.0.0/libpod/containers/create`), from the Docker-style
 * options the driver builds, with `cdiDevices` (CDI names such as `nvidia.com/gpu=0`) injected. Podman's
 * Docker-compatible API silently drops `HostConfig.DeviceRequests` (4.3) and rejects CDI names in
 * `HostConfig.Devices`; its own API injects CDI devices (at start: an unknown device fails the start).
 * Options this translation does not know are refused rather than dropped, so no setting (a limit, a hardening
 * flag) is lost on the way.
 */
export async function podmanCreate(
  docker: Docker,
  name: string,
  o: Docker.ContainerCreateOptions,
  cdiDevices: string[],
): Promise<Docker.Container> {
  const known = new Set([
    'Image',
    'Entrypoint',
    'Cmd',
    'Env',
    'Labels',
    'ExposedPorts',
    'Volumes',
    'HostConfig',
    'User',
    'WorkingDir',
    'name',
  ])
  const hcKnown = new Set([
    'Init',
    'NetworkMode',
    'PortBindings',
    'CgroupParent',
    'Memory',
    'NanoCpus',
    'Binds',
    'Mounts',
    'DeviceRequests',
    'CapDrop',
    'CapAdd',
    'SecurityOpt',
    'ReadonlyRootfs',
    'PidsLimit',
    'Privileged',
    'Tmpfs',
  ])
  const hc = o.HostConfig ?? {}
  const unknown = [
    ...Object.keys(o).filter((k) => !known.has(k) && o[k as keyof typeof o] !== undefined),
    ...Object.keys(hc)
      .filter((k) => !hcKnown.has(k) && hc[k as keyof typeof hc] !== undefined)
      .map((k) => `HostConfig.${k}`),
  ]
  if (unknown.length > 0)
    throw new Error(`cannot create a GPU container through Podman's API: ${unknown.join(', ')} has no translation`)
  const entrypoint = typeof o.Entrypoint === 'string' ? [o.Entrypoint] : o.Entrypoint
  const command = typeof o.Cmd === 'string' ? [o.Cmd] : o.Cmd
  const env = Object.fromEntries(
    (o.Env ?? []).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  )
  const spec: Record<string, unknown> = {
    name,
    image: o.Image,
    entrypoint,
    command,
    env,
    labels: o.Labels ?? {},
    init: hc.Init ?? false,
    user: o.User,
    work_dir: o.WorkingDir,
    cgroup_parent: hc.CgroupParent,
    devices: cdiDevices.map((path) => ({ path })),
    netns: { nsmode: hc.NetworkMode === 'host' ? 'host' : 'bridge' },
    privileged: hc.Privileged,
    cap_drop: hc.CapDrop,
    cap_add: hc.CapAdd,
    read_only_filesystem: hc.ReadonlyRootfs,
    no_new_privileges: hc.SecurityOpt?.some((s: string) => /^no-new-privileges(:true)?$/.test(s)) || undefined,
  }
  const otherSecurity = hc.SecurityOpt?.filter((s: string) => !/^no-new-privileges(:true)?$/.test(s)) ?? []
  if (otherSecurity.length > 0)
    throw new Error(
      `cannot create a GPU container through Podman's API: HostConfig.SecurityOpt ${otherSecurity.join(', ')} has no translation`,
    )
  const limits: Record<string, unknown> = {}
  if (hc.Memory) limits.memory = { limit: hc.Memory }
  if (hc.NanoCpus) limits.cpu = { quota: Math.round(hc.NanoCpus / 1e4), period: 100_000 }
  if (hc.PidsLimit) limits.pids = { limit: hc.PidsLimit }
  if (Object.keys(limits).length > 0) spec.resource_limits = limits
  if (hc.NetworkMode !== 'host' && hc.PortBindings) {
    spec.portmappings = Object.keys(hc.PortBindings).map((key) => {
      const [port, protocol] = key.split('/')
      return { container_port: Number(port), host_port: 0, protocol: protocol ?? 'tcp' }
    })
  }
  spec.mounts = (hc.Binds ?? []).map((b) => {
    const [source, destination, mode] = b.split(':')
    return { type: 'bind', source, destination, options: ['rbind', ...(mode === 'ro' ? ['ro'] : [])] }
  })
  if (hc.Tmpfs)
    for (const [destination, opts] of Object.entries(hc.Tmpfs))
      (spec.mounts as unknown[]).push({
        type: 'tmpfs',
        source: 'tmpfs',
        destination,
        options: opts ? opts.split(',') : [],
      })
  // Named volumes (persistent mounts), and the anonymous one of the container disk (an empty name).
  spec.volumes = [
    ...(hc.Mounts ?? []).map((m) => {
      if (m.Type !== 'volume')
        throw new Error(`cannot create a GPU container through Podman's API: a ${m.Type} mount has no translation`)
      return { Name: m.Source, Dest: m.Target, Options: [] }
    }),
    ...Object.keys(o.Volumes ?? {}).map((dest) => ({ Name: '', Dest: dest, Options: [] })),
  ]
  const created = await new Promise<{ Id: string }>((resolve, reject) => {
    docker.modem.dial(
      {
        path: '/v4.0.0/libpod/containers/create',
        method: 'POST',
        options: spec,
        statusCodes: {
          201: true,
          200: true,
          400: 'bad parameter',
          404: 'no such image',
          409: 'conflict',
          500: 'server error',
        },
      },
      (err: unknown, data: unknown) => (err ? reject(err) : resolve(data as { Id: string })),
    )
  })
  return docker.getContainer(created.Id)
}
