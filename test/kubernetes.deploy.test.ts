import { execFile, spawn } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import net from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { AppsV1Api, CoreV1Api, type V1Pod } from '@kubernetes/client-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { kubeEnv, kubernetesSkipReason, testKubeConfig } from './helpers/kubernetes.js'
import { dropSchema, freshSchemaName, PG_TEST_URL, pgUnavailable } from './helpers/postgres.js'
import { until } from './helpers/until.js'

/**
 * Hangar deployed in the test cluster as an operator deploys it (docs/kubernetes.md "In the cluster"): its image
 * (.ci/hangar-image.sh imports localhost/hangar:ci and :ci-next), the two Secrets, `kubectl apply -k` of
 * deploy/kubernetes/overlays/test-cluster/. Then jobs through the Service, the leader's Pod deleted under load, a
 * rolling update under load, and a Role short of one rule.
 *
 * The cluster has no kube-proxy: this test plays the Service `hangar` (what kube-proxy's userspace mode does), a
 * TCP proxy on 127.0.0.1:8179 (the overlay's workerUrl) to the Ready replicas, at the port each chose at start.
 */
const NS = 'hangar'
const SERVICE_PORT = 8179
const OVERLAY = fileURLToPath(new URL('../deploy/kubernetes/overlays/test-cluster/', import.meta.url))
const IMAGE = process.env.HANGAR_TEST_K8S_HANGAR_IMAGE
const NEXT_IMAGE = process.env.HANGAR_TEST_K8S_HANGAR_IMAGE_NEXT
const KUBECTL = process.env.HANGAR_K8S_DIR ? join(process.env.HANGAR_K8S_DIR, 'kubectl') : 'kubectl'
const SELECTOR = 'app.kubernetes.io/name=hangar'

async function skipReason(): Promise<string | null> {
  const k = await kubernetesSkipReason()
  if (k) return k
  let reason: string | null = null
  if (!IMAGE || !NEXT_IMAGE)
    reason =
      'HANGAR_TEST_K8S_HANGAR_IMAGE(_NEXT) not set (.ci/hangar-image.sh builds Hangar’s image and imports it): skipped'
  else {
    const pg = await pgUnavailable()
    if (pg) reason = `${pg}: Hangar in the cluster needs the host's PostgreSQL; skipped`
  }
  if (reason && kubeEnv.required) throw new Error(`${reason} (HANGAR_REQUIRE_KUBERNETES=1: it must run)`)
  return reason
}
const skip = await skipReason()
if (skip) console.warn(skip)

/** `kubectl logs -f` of a Pod, kept as it comes, until `stop` or the Pod's end. */
function followLog(pod: string): { text(): string; stop(): void } {
  const chunks: string[] = []
  const child = spawn(KUBECTL, ['--kubeconfig', kubeEnv.kubeconfig!, '-n', NS, 'logs', '-f', pod])
  child.stdout.on('data', (d: Buffer) => chunks.push(d.toString()))
  child.stderr.on('data', (d: Buffer) => chunks.push(d.toString()))
  child.on('error', () => undefined)
  return { text: () => chunks.join(''), stop: () => void child.kill() }
}

function kubectl(args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      KUBECTL,
      ['--kubeconfig', kubeEnv.kubeconfig!, ...args],
      { maxBuffer: 16 << 20 },
      (err, stdout, stderr) =>
        err ? reject(new Error(`kubectl ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout),
    )
    child.stdin!.end(input ?? '')
  })
}

/** A replica as the test sees it: its Pod, and the port it listens on (from its log). */
interface Replica {
  name: string
  ready: boolean
  deleting: boolean
  image: string
  port?: number
}

const isReady = (p: V1Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true

/**
 * The Service's stand-in: each connection goes to the next Ready replica (kube-proxy drops a Pod from the
 * Service once it is not Ready or is terminating); a replica that refuses the connection is skipped.
 */
function serviceStandIn(backends: () => number[]) {
  let next = 0
  const server = net.createServer((client) => {
    client.pause()
    // A client gone mid-connection is that client's affair; the upstream side is destroyed with it below.
    client.on('error', () => undefined)
    const tried = new Set<number>()
    const attempt = () => {
      const live = backends().filter((p) => !tried.has(p))
      if (live.length === 0) return void client.destroy()
      const port = live[next++ % live.length]
      tried.add(port)
      const up = net.connect(port, '127.0.0.1')
      up.once('error', attempt)
      up.once('connect', () => {
        up.removeListener('error', attempt)
        up.on('error', () => client.destroy())
        client.on('close', () => up.destroy())
        up.on('close', () => client.destroy())
        client.pipe(up)
        up.pipe(client)
        client.resume()
      })
    }
    attempt()
  })
  return server
}

describe.skipIf(skip !== null)('Hangar deployed in Kubernetes (deploy/kubernetes, the test-cluster overlay)', () => {
  const core = () => testKubeConfig().makeApiClient(CoreV1Api)
  const apps = () => testKubeConfig().makeApiClient(AppsV1Api)
  const schema = freshSchemaName('hangar_k8s')
  const adminKey = randomBytes(24).toString('hex')
  const ports = new Map<string, number>()
  let backends: number[] = []
  let refresher: NodeJS.Timeout | undefined
  let service: net.Server | undefined
  const base = `http://127.0.0.1:${SERVICE_PORT}`

  const replicas = async (): Promise<Replica[]> => {
    const pods = (await core().listNamespacedPod({ namespace: NS, labelSelector: SELECTOR })).items
    const out: Replica[] = []
    for (const p of pods) {
      const name = p.metadata!.name!
      if (!ports.has(name) && p.status?.phase === 'Running') {
        const log = await core()
          .readNamespacedPodLog({ name, namespace: NS })
          .catch(() => '')
        const m = /listening on http:\/\/[^\s"]+:(\d+)/.exec(String(log))
        if (m) ports.set(name, Number(m[1]))
      }
      out.push({
        name,
        ready: isReady(p),
        deleting: !!p.metadata?.deletionTimestamp,
        image: p.spec!.containers[0].image!,
        port: ports.get(name),
      })
    }
    return out
  }
  const roleAt = async (port: number): Promise<string | null> => {
    const res = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => null)
    return res?.ok ? ((await res.json()) as { role: string }).role : null
  }
  /** The serving replicas (Ready, not terminating) and who leads among them. */
  const roles = async () => {
    const live = (await replicas()).filter((r) => r.ready && !r.deleting && r.port)
    return Promise.all(live.map(async (r) => ({ ...r, role: await roleAt(r.port!) })))
  }
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return { status: res.status, body: (await res.json().catch(() => null)) as any }
  }

  beforeAll(async () => {
    // A namespace left by an interrupted run goes first (with the ClusterRole bindings of the last apply).
    await kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--timeout=180s'])
    service = serviceStandIn(() => backends)
    await new Promise<void>((resolve, reject) => {
      service!.once('error', reject)
      service!.listen(SERVICE_PORT, '127.0.0.1', () => resolve())
    })
    refresher = setInterval(() => {
      replicas().then(
        (rs) => (backends = rs.filter((r) => r.ready && !r.deleting && r.port).map((r) => r.port!)),
        (err) => console.warn(`the Service stand-in could not list the replicas: ${(err as Error).message}`),
      )
    }, 300)
  }, 240_000)

  afterAll(async () => {
    clearInterval(refresher)
    service?.close()
    await kubectl(['delete', 'namespace', NS, '--ignore-not-found', '--timeout=180s']).catch((err) =>
      console.warn(`could not delete namespace ${NS}: ${(err as Error).message}`),
    )
    await kubectl(['delete', 'clusterrole,clusterrolebinding', 'hangar-capacity', '--ignore-not-found']).catch((err) =>
      console.warn(`could not delete the ClusterRole hangar-capacity: ${(err as Error).message}`),
    )
    await dropSchema(schema).catch((err) => console.warn(`could not drop ${schema}: ${(err as Error).message}`))
  }, 240_000)

  it('is applied with kubectl apply -k: both replicas Ready, one leads, not root, with its ServiceAccount', async () => {
    // The commands of docs/kubernetes.md, with the host's PostgreSQL and a schema of this run.
    await kubectl(['create', 'namespace', NS])
    await kubectl([
      '-n',
      NS,
      'create',
      'secret',
      'generic',
      'hangar-db',
      `--from-literal=url=${PG_TEST_URL}?schema=${schema}`,
    ])
    await kubectl([
      '-n',
      NS,
      'create',
      'secret',
      'generic',
      'hangar-identity',
      `--from-literal=admin-api-key=${adminKey}`,
      `--from-literal=secret.key=${randomBytes(32).toString('base64')}`,
      `--from-literal=installation-id=${randomUUID()}`,
    ])
    await kubectl(['apply', '-k', OVERLAY])

    await until(
      async () =>
        (await apps().readNamespacedDeployment({ name: 'hangar', namespace: NS })).status?.readyReplicas === 2,
      180_000,
      'both replicas Ready',
    )
    const serving = await until(
      async () => {
        const r = await roles()
        return r.length === 2 && r.filter((x) => x.role === 'leader').length === 1 && r
      },
      30_000,
      'one leader among two Ready replicas',
    )
    expect(serving.map((r) => r.role).sort()).toEqual(['follower', 'leader'])
    expect(serving.map((r) => r.image)).toEqual([IMAGE, IMAGE])

    const pod = await core().readNamespacedPod({ name: serving[0].name, namespace: NS })
    expect(pod.spec!.serviceAccountName).toBe('hangar')
    // The process is user 10001 and the image has no development dependencies.
    const seen = await kubectl(['-n', NS, 'exec', serving[0].name, '--', 'sh', '-c', 'id -u; ls /app/node_modules'])
    const [uid, ...modules] = seen.trim().split('\n')
    expect(uid).toBe('10001')
    expect(modules).toContain('fastify')
    expect(modules.filter((m) => ['typescript', 'vitest', 'vite', '@biomejs', 'tsx'].includes(m))).toEqual([])
  }, 240_000)

  let ep = ''
  let workerPods: string[] = []
  const accepted: string[] = []

  it('runs jobs through the Service in worker Pods the in-cluster Hangar created', async () => {
    const created = await api('POST', '/v2/serverless', {
      name: 'k8s-deployed',
      type: 'QUEUE',
      image: kubeEnv.pythonImage,
      env: { HANDLER: 'concurrent', RUNPOD_SKIP_GPU_CHECK: 'true', RUNPOD_LOG_LEVEL: 'INFO' },
      cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
      scaling: { type: 'QUEUE_DELAY', queueDelay: 1 },
      workers: { min: 2, max: 2, idleTimeout: 600 },
    })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    ep = created.body.id
    const first = await api('POST', `/v2/${ep}/runsync?wait=120000`, { input: { seconds: 0.1 } })
    expect(first.body, JSON.stringify(first.body)).toMatchObject({ status: 'COMPLETED' })
    accepted.push(first.body.id)

    // Hangar's own Pods in its namespace, made with its ServiceAccount: the replicas hold no other credentials
    // (inCluster), and the RBAC test below shows a rule taken from that account's Role stops them.
    const installation = (
      await kubectl(['-n', NS, 'get', 'secret', 'hangar-identity', '-o', 'jsonpath={.data.installation-id}'])
    ).trim()
    await until(
      async () => {
        const pods = (
          await core().listNamespacedPod({ namespace: NS, labelSelector: `io.hangar.endpoint=${ep}` })
        ).items.filter((p) => p.status?.phase === 'Running')
        workerPods = pods.map((p) => p.metadata!.name!).sort()
        return (
          pods.length === 2 &&
          pods.every(
            (p) => p.metadata?.labels?.['io.hangar.installation'] === Buffer.from(installation, 'base64').toString(),
          )
        )
      },
      120_000,
      'two worker Pods of this installation running',
    )
  }, 240_000)

  /** Submits a job (0.2 s of work) every 100 ms through the Service until stopped; resolves to the ids accepted. */
  const load = () => {
    let running = true
    let i = 0
    const ids: string[] = []
    const done = (async () => {
      const inFlight: Array<Promise<void>> = []
      while (running) {
        inFlight.push(
          api('POST', `/v2/${ep}/run`, { input: { seconds: 0.2, i: i++ } }).then(
            (r) => void (r.status === 200 && ids.push(r.body.id)),
            // A connection cut by a replica going away: the job was not accepted, and a client would retry.
            () => undefined,
          ),
        )
        await new Promise((r) => setTimeout(r, 100))
      }
      await Promise.all(inFlight)
      return ids
    })()
    return {
      stop: async () => {
        running = false
        return done
      },
    }
  }

  /**
   * Every accepted job completed (read by status-sync, a few at a time), each started once by a worker (the runpod
   * SDK logs `Started.` per job) and none of their results refused (the SDK would drop it and the job run again).
   */
  const everyJobOnce = async (ids: string[]) => {
    const pending = new Set(ids)
    const ended: Record<string, string> = {}
    const deadline = Date.now() + 180_000
    while (pending.size > 0 && Date.now() < deadline) {
      await Promise.all(
        [...pending].slice(0, 16).map(async (id) => {
          const r = await api('GET', `/v2/${ep}/status-sync/${id}?wait=20000`).catch(() => null)
          const status = r?.body?.status as string | undefined
          if (status === 'COMPLETED') pending.delete(id)
          else if (status === 'FAILED' || status === 'CANCELLED' || status === 'TIMED_OUT') {
            ended[id] = status
            pending.delete(id)
          }
        }),
      )
    }
    expect({ pending: [...pending], ended }).toEqual({ pending: [], ended: {} })
    const runs = new Map<string, number>()
    const refused: string[] = []
    for (const name of workerPods) {
      const log = String(await core().readNamespacedPodLog({ name, namespace: NS }))
      for (const m of log.matchAll(/"requestId": "([^"]+)", "message": "Started\."/g))
        runs.set(m[1], (runs.get(m[1]) ?? 0) + 1)
      for (const line of log.split('\n')) if (line.includes('Failed to return job results')) refused.push(line)
    }
    expect(refused).toEqual([])
    expect(ids.filter((id) => runs.get(id) !== 1)).toEqual([])
  }
  /** The worker Pods of the endpoint now: the same ones throughout (handed over between leaders, not replaced). */
  const sameWorkers = async () => {
    const now = (await core().listNamespacedPod({ namespace: NS, labelSelector: `io.hangar.endpoint=${ep}` })).items
    const names = now.map((p) => p.metadata!.name!).sort()
    if (JSON.stringify(names) !== JSON.stringify(workerPods)) {
      // Say why before failing: what each replica said of its workers and its leadership.
      for (const h of (await core().listNamespacedPod({ namespace: NS, labelSelector: SELECTOR })).items) {
        const log = String(await core().readNamespacedPodLog({ name: h.metadata!.name!, namespace: NS }).catch(String))
        const lines = log.split('\n').filter((l) => /worker|leader|adopt/i.test(l) && !/GET \//.test(l))
        console.log(`kubernetes.deploy: ${h.metadata!.name} said:\n${lines.join('\n')}`)
      }
    }
    expect(names).toEqual(workerPods)
  }

  it('survives kubectl delete pod of the leader under load: the other leads, nothing lost or run twice', async () => {
    const before = await roles()
    const leader = before.find((r) => r.role === 'leader')!
    const follower = before.find((r) => r.role === 'follower')!
    const l = load()
    await new Promise((r) => setTimeout(r, 2_000))
    // The leader's own account of its stop, read while it stops (its log goes with its Pod), printed if no other
    // replica comes to lead.
    const stopping = followLog(leader.name)
    await kubectl(['-n', NS, 'delete', 'pod', leader.name, '--wait=false'])
    const deletedAt = Date.now()
    // The follower, or the Deployment's replacement: while the leader drains (HANGAR_DRAIN_MS) the replacement
    // starts, and whichever of the two tries the lock first once it is free leads.
    const others = async () => (await replicas()).filter((r) => r.name !== leader.name && r.port)
    const next = await until(
      async () => {
        for (const r of await others()) if ((await roleAt(r.port!)) === 'leader') return r.name
        return undefined
      },
      60_000,
      'another replica leading',
    ).catch(async (err) => {
      console.log(`kubernetes.deploy: the deleted leader ${leader.name} said:\n${stopping.text().slice(-8_000)}`)
      for (const r of await others()) {
        const ready = await fetch(`http://127.0.0.1:${r.port}/readyz`).then(
          async (res) => `${res.status} ${await res.text()}`,
          String,
        )
        const pod = await core()
          .readNamespacedPod({ name: r.name, namespace: NS })
          .catch(() => null)
        const restarts = pod?.status?.containerStatuses?.[0]?.restartCount ?? 0
        const log = await core().readNamespacedPodLog({ name: r.name, namespace: NS }).catch(String)
        console.log(
          `kubernetes.deploy: ${r.name} (/readyz: ${ready}, restarts: ${restarts}) said:\n${String(log).slice(-8_000)}`,
        )
      }
      throw err
    })
    stopping.stop()
    console.log(
      `kubernetes.deploy: ${next === follower.name ? 'the follower' : 'the replacement'} led ${Date.now() - deletedAt} ms after the leader's Pod was deleted`,
    )
    await new Promise((r) => setTimeout(r, 3_000))
    const ids = await l.stop()
    expect(ids.length).toBeGreaterThan(20)
    console.log(`kubernetes.deploy: ${ids.length} jobs accepted through the leader's deletion`)
    accepted.push(...ids)

    // Two replicas serve again, the deleted one gone: the new leader and the other as its follower.
    await until(
      async () => {
        const r = await roles()
        return (
          r.length === 2 &&
          !r.some((x) => x.name === leader.name) &&
          r.find((x) => x.name === next)?.role === 'leader' &&
          r.find((x) => x.name !== next)?.role === 'follower'
        )
      },
      120_000,
      'the two replicas Ready, one leading',
    )
    await sameWorkers()
    await everyJobOnce(ids)
  }, 360_000)

  it('rolls out a new image tag under load with the same guarantees', async () => {
    const l = load()
    await new Promise((r) => setTimeout(r, 1_000))
    await kubectl(['-n', NS, 'set', 'image', 'deployment/hangar', `hangar=${NEXT_IMAGE}`])
    await kubectl(['-n', NS, 'rollout', 'status', 'deployment/hangar', '--timeout=300s'])
    await new Promise((r) => setTimeout(r, 2_000))
    const ids = await l.stop()
    expect(ids.length).toBeGreaterThan(20)
    console.log(`kubernetes.deploy: ${ids.length} jobs accepted through the rolling update`)
    const after = await until(
      async () => {
        const r = await roles()
        return r.length === 2 && r.filter((x) => x.role === 'leader').length === 1 && r
      },
      60_000,
      'one leader among the two new replicas',
    )
    expect(after.map((r) => r.image)).toEqual([NEXT_IMAGE, NEXT_IMAGE])
    await sameWorkers()
    await everyJobOnce(ids)
  }, 480_000)

  it('says what it may not do when its Role lacks a rule, and starts once the Role is restored', async () => {
    const role = JSON.parse(await kubectl(['-n', NS, 'get', 'role', 'hangar', '-o', 'json']))
    const rules = role.rules as Array<{ resources: string[]; verbs: string[] }>
    role.rules = rules.filter((r) => !r.resources.includes('pods/log'))
    expect(role.rules.length).toBe(rules.length - 1)
    await kubectl(['replace', '-f', '-'], JSON.stringify(role))

    // A replica starting now (a follower's Pod deleted: the leader keeps serving) refuses to start.
    const follower = (await roles()).find((r) => r.role === 'follower')!
    await kubectl(['-n', NS, 'delete', 'pod', follower.name, '--wait=false'])
    const message = await until(
      async () => {
        for (const p of (await core().listNamespacedPod({ namespace: NS, labelSelector: SELECTOR })).items) {
          if (p.metadata?.name === follower.name) continue
          const c = p.status?.containerStatuses?.[0]
          const ended = c?.lastState?.terminated ?? c?.state?.terminated
          if (ended?.exitCode === 1) {
            const log = await core()
              .readNamespacedPodLog({ name: p.metadata!.name!, namespace: NS, previous: !c?.state?.terminated })
              .catch(() => '')
            if (String(log).includes('may not')) return String(log)
          }
        }
        return false
      },
      120_000,
      'the new replica refusing to start',
    )
    expect(message).toContain(
      "runtime.kubernetes: this Pod's ServiceAccount may not get pods/log in namespace hangar (to read the output of workers and pods)",
    )
    expect((await apps().readNamespacedDeployment({ name: 'hangar', namespace: NS })).status?.readyReplicas).toBe(1)

    // The Role restored (as applying the manifests again would; that would also set the image back): the replica
    // starts at its next restart (the kubelet's back-off, 10 s doubling).
    const restored = JSON.parse(await kubectl(['-n', NS, 'get', 'role', 'hangar', '-o', 'json']))
    restored.rules = rules
    await kubectl(['replace', '-f', '-'], JSON.stringify(restored))
    await until(
      async () =>
        (await apps().readNamespacedDeployment({ name: 'hangar', namespace: NS })).status?.readyReplicas === 2,
      180_000,
      'both replicas Ready again',
    )
  }, 360_000)
})
