import { createRequire } from 'node:module'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { endpointBody } from './helpers/endpoints.js'
import { podBody, terminateAll } from './helpers/pods.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

const GPU = 'NVIDIA GeForce RTX 4090'

/** One host of two simulated 4090s per data center, so a 2-node cluster fits; CPU pods go there too. */
const config = {
  billing: { checkpointMs: 200 },
  jobs: { stopGraceMs: 2_000 },
  catalog: {
    dataCenters: [
      {
        id: 'DC-B',
        name: 'B',
        region: 'EUROPE',
        globalNetwork: false,
        networkVolumeTypes: ['STANDARD'],
        compliance: [],
      },
    ],
  },
  fleet: {
    detectGpus: false,
    hosts: [
      {
        id: 'b1',
        dataCenterId: 'DC-B',
        vcpus: 16,
        memoryGb: 64,
        gpus: [{ typeId: GPU, count: 2, cudaVersion: '12.4', virtual: true }],
      },
      {
        id: 'b2',
        dataCenterId: 'DC-B',
        vcpus: 16,
        memoryGb: 64,
        gpus: [{ typeId: GPU, count: 2, cudaVersion: '12.4', virtual: true }],
      },
    ],
  },
}

interface ToolResult {
  isError: boolean
  /** The tool's JSON text content, parsed. */
  body: any
}

/**
 * The published Runpod MCP server (`@runpod/mcp-server`, unmodified) over stdio, pointed at a real Hangar
 * and driven with the MCP SDK client: what an agent using that server sees.
 */
describe('the published Runpod MCP server against Hangar', () => {
  let s: TestServer
  let client: Client
  let key: string
  let stderr = ''

  const call = async (name: string, args: Record<string, unknown> = {}): Promise<ToolResult> => {
    const r = (await client.callTool({ name, arguments: args })) as {
      isError?: boolean
      content: Array<{ type: string; text: string }>
    }
    expect(r.content[0]?.type).toBe('text')
    return { isError: r.isError === true, body: JSON.parse(r.content[0].text) }
  }
  /** Calls a tool that must succeed; on failure the message carries what it returned and the server's log. */
  const ok = async (name: string, args: Record<string, unknown> = {}): Promise<any> => {
    const r = await call(name, args)
    if (r.isError)
      throw new Error(`${name} failed: ${JSON.stringify(r.body)}\nMCP server stderr:\n${stderr.slice(-2000)}`)
    return r.body
  }
  const podStatus = (id: string, status: string) =>
    until(
      async () => {
        const pod = await ok('get-pod', { id })
        return pod.status === status ? pod : undefined
      },
      20_000,
      `pod ${id} ${status}`,
    )

  beforeAll(async () => {
    s = await startTestServer(config)
    key = await s.accountKey('agent')
    const entry = createRequire(import.meta.url)
      .resolve('@runpod/mcp-server/package.json')
      .replace(/package\.json$/, 'dist/stdio.mjs')
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [entry],
      // Only these (plus the SDK's PATH/HOME defaults): no POSTHOG_API_KEY, so no analytics; the GraphQL
      // hosts point at Hangar too, so nothing the server does can leave this machine.
      env: {
        RUNPOD_API_KEY: key,
        RUNPOD_API_BASE_URL: s.url,
        RUNPOD_SERVERLESS_API_URL: `${s.url}/v2`,
        RUNPOD_PUBLIC_GRAPHQL_URL: `${s.url}/graphql`,
        RUNPOD_AUTHED_GRAPHQL_URL: `${s.url}/graphql`,
      },
      stderr: 'pipe',
    })
    transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
    client = new Client({ name: 'hangar-test', version: '0.0.0' })
    await client.connect(transport)
  })
  afterAll(async () => {
    await client?.close()
    if (s) {
      for (const c of (await s.api('GET', '/v2/clusters', undefined, key)).body?.clusters ?? [])
        await s.api('DELETE', `/v2/clusters/${c.id}`, undefined, key)
      await terminateAll(s, key)
      await s.stop()
    }
  })

  it('lists the pod, cluster, billing, volume, template and endpoint tools', async () => {
    const names = (await client.listTools()).tools.map((t) => t.name)
    for (const name of [
      'create-pod',
      'get-pod',
      'list-pods',
      'pod-action',
      'delete-pod',
      'create-cluster',
      'get-cluster',
      'delete-cluster',
      'list-billing',
      'list-pod-billing',
      'list-cluster-billing',
      'list-network-volumes',
      'create-network-volume',
      'list-templates',
      'list-endpoints',
    ]) {
      expect(names).toContain(name)
    }
  })

  let podId: string
  it('creates a pod, sees it RUNNING, stops and starts it, lists it', async () => {
    const created = await ok('create-pod', { body: podBody({ name: 'via-mcp' }) })
    expect(created).toMatchObject({
      id: expect.any(String),
      name: 'via-mcp',
      image: 'hangar/pod:latest',
      status: 'PROVISIONING',
    })
    podId = created.id
    const running = await podStatus(podId, 'RUNNING')
    expect(running).toMatchObject({
      actions: ['stop', 'restart', 'terminate'],
      cpu: { id: 'cpu3c', vcpuCount: 2 },
      dataCenterId: 'DC-B',
    })

    const stopped = await ok('pod-action', { id: podId, body: { action: 'stop' } })
    expect(stopped).toMatchObject({ id: podId, status: 'EXITED', actions: ['start', 'terminate'] })
    const started = await ok('pod-action', { id: podId, body: { action: 'start' } })
    expect(started.id).toBe(podId)
    await podStatus(podId, 'RUNNING')

    expect(await ok('update-pod', { id: podId, body: { name: 'via-mcp-renamed' } })).toMatchObject({
      id: podId,
      name: 'via-mcp-renamed',
      status: 'RUNNING',
    })
    const again = await call('pod-action', { id: podId, body: { action: 'start' } })
    expect(again.isError).toBe(true)
    expect(again.body.status).toBe(409)

    const listed = await ok('list-pods')
    expect(listed.pods.map((p: any) => [p.id, p.status])).toEqual([[podId, 'RUNNING']])
  })

  it('shows the pod in its billing once time has passed', async () => {
    // The pod has run for a while; the ledger bills open intervals up to now.
    await new Promise((r) => setTimeout(r, 1_000))
    await s.hangar.meter.flush()
    // Filtered to the pod: its CPU and container disk are billed.
    const one = await ok('list-pod-billing', { podId, bucketSize: 'day', lastN: 1 })
    expect(one.metadata).toMatchObject({ query: { podId, bucketSize: 'day' }, recordCount: 1, uniquePodCount: 1 })
    expect(one.records[0].cpuAmount).toBeGreaterThan(0)
    expect(one.records[0].gpuAmount).toBe(0)
    expect(one.records[0].totalAmount).toBeGreaterThan(0)
    // Unfiltered, records are grouped by GPU type (the spec's default grouping, which the tool cannot change):
    // a CPU pod's usage is under gpuId null.
    const pods = await ok('list-pod-billing', { bucketSize: 'day', lastN: 1 })
    expect(pods.metadata).toMatchObject({ query: { grouping: 'gpuId' }, uniquePodCount: 1 })
    expect(pods.records).toEqual([expect.objectContaining({ podId: null, gpuId: null, cpuAmount: expect.any(Number) })])
    expect(pods.records[0].cpuAmount).toBeGreaterThanOrEqual(one.records[0].cpuAmount)

    const all = await ok('list-billing', { bucketSize: 'day', lastN: 1 })
    expect(all.records).toHaveLength(1)
    expect(all.records[0].podCpuAmount).toBeGreaterThan(0)
    expect(all.records[0].totalAmount).toBeGreaterThan(0)
  })

  it('returns Hangar’s problem text for a pod with both gpu and cpu', async () => {
    const r = await call('create-pod', { body: podBody({ gpu: { id: GPU } }) })
    expect(r.isError).toBe(true)
    expect(r.body).toMatchObject({ status: 400, errors: ['$: exactly one of gpu or cpu must be set; both were sent'] })
  })

  it('creates and deletes a 2-node cluster', async () => {
    const created = await ok('create-cluster', {
      body: {
        name: 'mcp-train',
        type: 'TRAINING',
        compute: { gpuTypeId: GPU, gpuCountPerPod: 1, podCount: 2 },
        image: 'hangar/cluster:latest',
      },
    })
    expect(created).toMatchObject({
      id: expect.any(String),
      name: 'mcp-train',
      dataCenterId: 'DC-B',
      pods: { total: 2 },
    })
    await until(
      async () => (await ok('get-cluster', { id: created.id })).pods.byStatus.RUNNING === 2,
      20_000,
      'both members RUNNING',
    )
    const members = await ok('list-cluster-pods', { id: created.id })
    expect(members.pods.map((p: any) => p.cluster.rank)).toEqual([0, 1])
    await new Promise((r) => setTimeout(r, 500))
    await s.hangar.meter.flush()
    const billed = await ok('list-cluster-billing', { clusterId: created.id, bucketSize: 'day', lastN: 1 })
    expect(billed.metadata).toMatchObject({ query: { clusterId: created.id }, uniqueClusterCount: 1 })
    expect(billed.records).toEqual([expect.objectContaining({ clusterId: created.id })])
    expect(billed.records[0].gpuAmount).toBeGreaterThan(0)
    expect(await ok('delete-cluster', { id: created.id })).toEqual({ status: 204 })
    const gone = await call('get-cluster', { id: created.id })
    expect(gone.isError).toBe(true)
    expect(gone.body.status).toBe(404)
  })

  it('reads the pod’s logs through stream-pod-logs', async () => {
    const logs = await ok('stream-pod-logs', { podId, tail: 100, maxWaitMs: 1_500 })
    expect(logs.truncated).toBe(false)
    expect(logs.count).toBeGreaterThan(0)
    expect(logs.items[0]).toMatchObject({
      ts: expect.any(String),
      source: expect.any(String),
      line: expect.any(String),
    })
  })

  it('reads the catalog and manages network volumes and templates; lists endpoints', async () => {
    const gpus = await ok('list-gpu-types')
    expect(JSON.stringify(gpus)).toContain(GPU)
    const dcs = await ok('list-data-centers')
    expect(JSON.stringify(dcs)).toContain('DC-B')

    const vol = await ok('create-network-volume', { body: { name: 'mcp-data', size: 10, dataCenter: 'DC-B' } })
    expect(vol).toMatchObject({
      id: expect.any(String),
      name: 'mcp-data',
      size: 10,
      dataCenter: 'DC-B',
      type: 'STANDARD',
    })
    expect((await ok('list-network-volumes')).networkVolumes.map((v: any) => v.id)).toEqual([vol.id])
    expect(await ok('update-network-volume', { id: vol.id, body: { size: 20 } })).toMatchObject({
      id: vol.id,
      size: 20,
    })
    expect(await ok('delete-network-volume', { id: vol.id })).toEqual({ status: 204 })
    expect((await ok('list-network-volumes')).networkVolumes).toEqual([])

    const tpl = await ok('create-template', {
      body: { name: 'mcp-tpl', image: 'hangar/pod:latest', ports: ['8080/http'] },
    })
    expect(tpl).toMatchObject({ id: expect.any(String), name: 'mcp-tpl', image: 'hangar/pod:latest' })
    expect((await ok('list-templates')).templates).toContainEqual({
      id: tpl.id,
      name: 'mcp-tpl',
      image: 'hangar/pod:latest',
      serverless: false,
    })
    expect(await ok('get-template', { id: tpl.id })).toMatchObject({ id: tpl.id, name: 'mcp-tpl' })
    expect(await ok('delete-template', { id: tpl.id })).toEqual({ status: 204 })

    expect(await ok('list-endpoints')).toMatchObject({ items: [] })
  })

  it('creates an endpoint and runs jobs on it through the serverless URL', async () => {
    const ep = await ok('create-endpoint', { body: endpointBody('hangar/echo:latest', { name: 'mcp-echo' }) })
    expect(ep).toMatchObject({ id: expect.any(String), name: 'mcp-echo', type: 'QUEUE' })
    expect((await ok('list-endpoints')).items.map((e: any) => e.id)).toEqual([ep.id])
    const sync = await ok('runsync-endpoint', { endpointId: ep.id, input: { prompt: 'hello' }, wait: 20_000 })
    expect(sync).toMatchObject({ status: 'COMPLETED', output: { prompt: 'hello' } })
    const run = await ok('run-endpoint', { endpointId: ep.id, input: { a: 1 } })
    expect(run).toMatchObject({ id: expect.any(String) })
    const done = await ok('get-job-status', { endpointId: ep.id, jobId: run.id, wait: 20_000 })
    expect(done).toMatchObject({ id: run.id, status: 'COMPLETED', output: { a: 1 } })
    expect(await ok('endpoint-health', { endpointId: ep.id })).toMatchObject({
      jobs: { completed: expect.any(Number) },
      workers: expect.any(Object),
    })
    expect(await ok('delete-endpoint', { id: ep.id })).toEqual({ status: 204 })
  })

  it('deletes the pod', async () => {
    expect(await ok('delete-pod', { id: podId })).toEqual({ status: 204 })
    const gone = await call('get-pod', { id: podId })
    expect(gone.isError).toBe(true)
    expect(gone.body.status).toBe(404)
    expect((await ok('list-pods')).pods).toEqual([])
  })
})
