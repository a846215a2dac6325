// Bench worker `bench/idle:latest`: calls in and keeps sending heartbeats, but never takes a job. An
// endpoint with one of these counts one running worker (so its job-operation limits follow the per-worker
// allowance) while everything submitted stays queued (workload 7).
const url = process.env.RUNPOD_WEBHOOK_PING
const key = process.env.RUNPOD_AI_API_KEY
const every = Number(process.env.RUNPOD_PING_INTERVAL ?? 10_000)
const ping = () =>
  fetch(url, { headers: { authorization: key } }).then(
    (r) => r.body?.cancel(),
    () => {},
  )
ping()
const timer = setInterval(ping, every)
process.once('SIGTERM', () => {
  clearInterval(timer)
  process.exit(0)
})
