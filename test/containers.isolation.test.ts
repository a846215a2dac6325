import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { CONTAINER_CAPABILITIES, DockerDriver } from '../src/runtime/docker/DockerDriver.js'
import { engineClient } from '../src/runtime/docker/engineClient.js'
import { containerEnv, containerSkipReason } from './helpers/containers.js'

/**
 * Issue 27, item 1 on containers: the same attack as on the process runtime (the control plane's environment
 * through /proc, `../` and a symlink out of the volume, another account's volume by its host path) finds
 * nothing, and the container the engine was asked for is unprivileged, in its own PID namespace, with
 * capabilities dropped to the usual set and no host path but the workload's own volume.
 */
const skip = containerSkipReason()
if (skip) console.warn(skip)

/** Bit numbers of capabilities (linux/capability.h). */
const CAP_BITS: Record<string, number> = {
  CHOWN: 0,
  DAC_OVERRIDE: 1,
  FOWNER: 3,
  FSETID: 4,
  KILL: 5,
  SETGID: 6,
  SETUID: 7,
  SETPCAP: 8,
  NET_BIND_SERVICE: 10,
  NET_RAW: 13,
  SYS_CHROOT: 18,
  MKNOD: 27,
  AUDIT_WRITE: 29,
  SETFCAP: 31,
}
const OTHER_MARKER = 'another-accounts-volume-content-5d21'
const ATTACK = [
  'echo "--environ"; for f in /proc/1/environ /proc/[0-9]*/environ; do { tr "\\0" "\\n" < "$f"; } 2>/dev/null | grep "^HANGAR_"; done',
  'echo "--escape"; cat ../../../secret.key "$DATA/secret.key" /runpod-volume/../../secret.key',
  'ln -sf "$DATA/secret.key" /runpod-volume/key-link; cat /runpod-volume/key-link',
  'echo "--other-volume"; cat "$OTHER/marker.txt"',
  'echo "--engine"; ls -l /var/run/docker.sock /run/podman/podman.sock 2>&1',
  'echo "processes=$(ls /proc | grep -c "^[0-9]")"',
  'echo "caps=$(grep CapEff /proc/self/status)"',
  'echo ATTACK-DONE',
].join('\n')

describe.skipIf(skip !== null)('containers isolate tenants', { timeout: 120_000 }, () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hangar-iso-docker-'))
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

  it('runs the attack in an unprivileged container that sees nothing of the host but its own volume', async () => {
    const engine = {
      address: containerEnv.dockerHost!,
      network: 'host' as const,
      gpus: 'none' as const,
      cgroupParent: containerEnv.cgroupParent,
    }
    const driver = new DockerDriver({ hostId: 'podman-a', dataDir, engine })
    writeFileSync(join(dataDir, 'secret.key'), 'SEALING-KEY-must-not-leak')
    const own = join(dataDir, 'volumes', 'LOCAL-1', 'vol_mine')
    const other = join(dataDir, 'volumes', 'LOCAL-1', 'vol_theirs')
    mkdirSync(own, { recursive: true })
    mkdirSync(other, { recursive: true })
    writeFileSync(join(other, 'marker.txt'), OTHER_MARKER)
    const w = await driver.start({
      id: `iso-${process.pid}`,
      kind: 'worker',
      hostId: 'podman-a',
      labels: { 'io.hangar.installation': `iso-test-${process.pid}` },
      image: containerEnv.bbImage,
      entrypoint: ['sh', '-c', ATTACK],
      cmd: [],
      env: { DATA: dataDir, OTHER: other },
      gpus: { ids: [], virtual: true },
      resources: { vcpus: 0, memoryGb: 0 },
      mounts: [
        { kind: 'disk', target: '/workspace', sizeGb: 1 },
        { kind: 'volume', source: own, target: '/runpod-volume' },
      ],
      ports: [],
    })
    try {
      await w.exited
      const info = await engineClient(engine).getContainer(w.ref.split(':').at(-1)!).inspect()
      const hc = info.HostConfig
      expect(hc.Privileged).toBe(false)
      expect(hc.PidMode ?? '').not.toBe('host')
      // Docker reports the request (ALL, then CapAdd); Podman what it dropped from its own default set.
      const dropped = (hc.CapDrop ?? []).map((c: string) => c.replace(/^CAP_/, ''))
      expect(
        dropped.includes('ALL') || ['NET_RAW', 'MKNOD', 'AUDIT_WRITE'].every((c) => dropped.includes(c)),
        `CapDrop ${JSON.stringify(dropped)}`,
      ).toBe(true)
      for (const cap of hc.CapAdd ?? []) expect(CONTAINER_CAPABILITIES).toContain(cap.replace(/^CAP_/, ''))
      // Bind mounts: the workload's own volume, nothing else of the host (no engine socket).
      const binds = (info.Mounts ?? []).filter((m) => m.Type === 'bind').map((m) => m.Source)
      expect(binds).toEqual([own])
      const log = w.logs
        .history()
        .map((l) => l.line)
        .join('\n')
      expect(log).toContain('ATTACK-DONE')
      expect(log).not.toContain('SEALING-KEY')
      expect(log).not.toContain(OTHER_MARKER)
      expect(log).not.toMatch(/^HANGAR_(ADMIN|METRICS|DATABASE)/m)
      expect(log).not.toMatch(/srw/)
      // What the program holds is exactly the usual set.
      const effective = BigInt(`0x${/caps=CapEff:\s*([0-9a-f]+)/.exec(log)![1]}`)
      expect(effective).toBe(CONTAINER_CAPABILITIES.reduce((mask, c) => mask | (1n << BigInt(CAP_BITS[c])), 0n))
      // Its own PID namespace: the init and the shell, not the host's processes.
      expect(Number(/processes=(\d+)/.exec(log)![1])).toBeLessThan(8)
    } finally {
      await driver.remove(w.ref)
    }
  })
})
