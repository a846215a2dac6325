import type { Template } from '../contract/template.js'

const serverlessWorker = (
  id: string,
  name: string,
  category: Template['category'],
  env: Record<string, string> = {},
): Template => ({
  id,
  name,
  image: `hangar/${id.replace(/^hangar-/, '')}:latest`,
  args: '',
  cmd: [],
  entrypoint: [],
  disk: 5,
  env,
  ports: [],
  registry: null,
  mounts: {},
  serverless: true,
  public: true,
  category,
  // Pod-only flags; serverless workers ignore them.
  startSsh: false,
  startJupyter: false,
  allowedCudaVersions: [],
})

/**
 * Templates Hangar ships, listed under `GET /v2/catalog/templates?source=official` and readable by every
 * account through `GET /v2/templates/{id}`. The serverless ones run the sample workers (echo, sleep,
 * stream, fail) used in the docs and the jobs tests. They live in code, not the store, so no account
 * owns them and none can change or delete them.
 */
export const OFFICIAL_TEMPLATES: readonly Template[] = Object.freeze([
  serverlessWorker('hangar-echo', 'Hangar sample worker: echo', 'CPU'),
  serverlessWorker('hangar-sleep', 'Hangar sample worker: sleep', 'CPU'),
  serverlessWorker('hangar-stream', 'Hangar sample worker: stream', 'CPU'),
  serverlessWorker('hangar-fail', 'Hangar sample worker: fail', 'CPU'),
  serverlessWorker('hangar-openai', 'Hangar sample worker: OpenAI-compatible echo model', 'CPU'),
  {
    // The sample pod program (src/sampleWorkers/pod.ts): HTTP on 8080, files kept on the persistent mount.
    id: 'hangar-pod',
    name: 'Hangar sample pod',
    image: 'hangar/pod:latest',
    args: '',
    cmd: [],
    entrypoint: [],
    disk: 5,
    env: {},
    ports: ['8080/http', '22/tcp'],
    registry: null,
    mounts: { persistent: { size: 10, path: '/workspace' } },
    serverless: false,
    public: true,
    category: 'CPU',
    startSsh: true,
    startJupyter: false,
    allowedCudaVersions: [],
  },
  {
    id: 'hangar-pytorch-jupyter',
    name: 'PyTorch 2 with JupyterLab',
    image: 'pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime',
    args: '',
    cmd: [],
    entrypoint: [],
    disk: 20,
    env: {},
    ports: ['8888/http', '22/tcp'],
    registry: null,
    mounts: { persistent: { size: 20, path: '/workspace' } },
    serverless: false,
    public: true,
    category: 'NVIDIA',
    startSsh: true,
    startJupyter: true,
    allowedCudaVersions: ['12.4', '12.5', '12.6', '12.7', '12.8'],
  },
])

const byId = new Map(OFFICIAL_TEMPLATES.map((t) => [t.id, t]))

/** The official template with this id, as a copy the caller may change. */
export function officialTemplate(id: string): Template | undefined {
  const t = byId.get(id)
  return t ? structuredClone(t) : undefined
}
