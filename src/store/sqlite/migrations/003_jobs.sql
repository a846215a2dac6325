-- Jobs of queue endpoints. Times are epoch milliseconds. `seq` orders the queue; a retried job gets a new
-- one (back of the queue) while a job requeued after losing its worker keeps its place.
CREATE TABLE jobs (
  id TEXT PRIMARY KEY,
  endpoint_id TEXT NOT NULL,
  account_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('IN_QUEUE', 'IN_PROGRESS', 'COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT')),
  input TEXT NOT NULL,
  webhook TEXT,
  policy TEXT,
  s3_config TEXT,
  sync INTEGER NOT NULL DEFAULT 0,
  low_priority INTEGER NOT NULL DEFAULT 0,
  execution_timeout_ms INTEGER NOT NULL,
  ttl_ms INTEGER NOT NULL,
  retention_ms INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  started_at INTEGER,
  completed_at INTEGER,
  expires_at INTEGER NOT NULL,
  retain_until INTEGER,
  worker_id TEXT,
  output TEXT,
  error TEXT,
  retries INTEGER NOT NULL DEFAULT 0,
  progress TEXT,
  stream_cursor INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX jobs_queue ON jobs(endpoint_id, low_priority, seq) WHERE status = 'IN_QUEUE';
CREATE INDEX jobs_running ON jobs(worker_id) WHERE status = 'IN_PROGRESS';
CREATE INDEX jobs_endpoint_status ON jobs(endpoint_id, status);
CREATE INDEX jobs_expires ON jobs(expires_at);
CREATE INDEX jobs_seq ON jobs(seq);
CREATE INDEX jobs_retain ON jobs(retain_until) WHERE retain_until IS NOT NULL;

-- Streamed output, in order per job.
CREATE TABLE job_chunks (
  job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  output TEXT NOT NULL,
  PRIMARY KEY (job_id, seq)
);

-- Webhook notifications owed; kept after the job is gone so a restart resumes them.
CREATE TABLE webhook_deliveries (
  id TEXT PRIMARY KEY,
  job_id TEXT NOT NULL,
  url TEXT NOT NULL,
  payload TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('PENDING', 'DELIVERED', 'FAILED')),
  attempts TEXT NOT NULL DEFAULT '[]',
  next_attempt_at INTEGER,
  created_at INTEGER NOT NULL
);
CREATE INDEX webhook_due ON webhook_deliveries(next_attempt_at) WHERE state = 'PENDING';
CREATE INDEX webhook_job ON webhook_deliveries(job_id);

-- Serverless workers, so a restarted control plane can find and stop those of its previous run.
CREATE TABLE workers (
  id TEXT PRIMARY KEY,
  endpoint_id TEXT NOT NULL,
  account_id TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('STARTING', 'READY', 'STOPPING', 'EXITED', 'FAILED')),
  token_hash TEXT NOT NULL,
  version INTEGER NOT NULL,
  image TEXT NOT NULL,
  gpu_type_id TEXT,
  gpu_count INTEGER NOT NULL DEFAULT 0,
  data_center_id TEXT,
  pid INTEGER,
  pid_marker TEXT,
  created_at INTEGER NOT NULL,
  started_at INTEGER,
  stopped_at INTEGER,
  last_error TEXT
);
CREATE INDEX workers_active ON workers(endpoint_id, state);
