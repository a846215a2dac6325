import { randomBytes } from 'node:crypto'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { containerEnv, containerSkipReason } from './helpers/containers.js'
import { createPod, readPodLogs, waitPod } from './helpers/pods.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const CDI_DIR = '/var/run/cdi'
const skip =
  containerSkipReason() ??
  (process.getuid?.() === 0
    ? null
    : `GPU passthrough tests write a fake CDI spec to ${CDI_DIR}, which needs root: skipped`)
if (skip) console.warn(skip)

const GPU = 'NVIDIA L4'

/**
 * GPUs on Podman without a GPU: a fake CDI spec whose device 0 injects an env variable and mounts a file. Podman's
 * Docker-compatible API drops DeviceRequests; Hangar must create GPU containers through Podman's own API.
 */
describe.skipIf(skip !== null)('GPUs reach containers on Podman (a fake CDI device)', () => {
  // A kind of our own, so no other CDI user of this machine sees it.
  const kind = `hangar-test-${randomBytes(4).toString('hex')}.example/gpu`
  const specFile = `${CDI_DIR}/${kind.split('/')[0]}.yaml`
  let s: TestServer
  beforeAll(async () => {
    mkdirSync(CDI_DIR, { recursive: true })
    writeFileSync(
      specFile,
      [
        'cdiVersion: "0.5.0"',
        `kind: ${kind}`,
        'devices:',
        '  - name: "0"',
        '    containerEdits:',
        '      env: ["HANGAR_FAKE_GPU=0"]',
        '      mounts:',
        '        - hostPath: /etc/hostname',
        '          containerPath: /run/hangar-fake-gpu0',
        '          options: ["ro", "bind"]',
        '',
      ].join('\n'),
    )
    s = await startTestServer({
      fleet: {
        detectGpus: false,
        hosts: [
          {
            id: 'gpu-box',
            dataCenterId: 'LOCAL-1',
            vcpus: 16,
            memoryGb: 64,
            // Two real (not virtual) GPUs; the CDI spec knows only the first.
            gpus: [{ typeId: GPU, count: 2, cudaVersion: '12.4' }],
            engine: {
              address: containerEnv.dockerHost,
              network: 'host',
              gpus: 'cdi',
              cdiKind: kind,
              cgroupParent: containerEnv.cgroupParent,
            },
          },
        ],
      },
    })
  })
  afterAll(async () => {
    await s?.stop()
    rmSync(specFile, { force: true })
  })

  it('a GPU pod gets its CDI device (env and file), and one whose device the engine cannot inject never starts', async () => {
    const cmd = [
      'sh',
      '-c',
      'echo "gpu env: $HANGAR_FAKE_GPU"; test -f /run/hangar-fake-gpu0 && echo "gpu file: present"; exec sleep 600',
    ]
    const first = await createPod(s, {
      name: 'gpu-0',
      image: containerEnv.bbImage,
      gpu: { id: GPU, count: 1 },
      cmd,
      ports: [],
    })
    await waitPod(s, first.id, 'RUNNING', undefined, 60_000)
    const lines = await readPodLogs(s, first.id, { query: 'tail=100&source=container', match: /gpu file/ })
    expect(lines.map((l) => l.data.line)).toEqual(expect.arrayContaining(['gpu env: 0', 'gpu file: present']))

    // The second GPU (index 1) has no CDI device: the pod fails, saying so, instead of running without it.
    const second = await createPod(s, {
      name: 'gpu-1',
      image: containerEnv.bbImage,
      gpu: { id: GPU, count: 1 },
      cmd,
      ports: [],
    })
    const failed = await waitPod(s, second.id, 'ERROR', undefined, 60_000)
    const why = await readPodLogs(s, failed.id, { query: 'tail=100&source=system', match: /unresolvable CDI devices/ })
    expect(why.at(-1)!.data.line).toContain(`unresolvable CDI devices ${kind}=1`)
    await s.api('DELETE', `/v2/pods/${first.id}`)
    await s.api('DELETE', `/v2/pods/${second.id}`)
  }, 150_000)
})
