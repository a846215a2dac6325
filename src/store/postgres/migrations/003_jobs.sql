-- Jobs of queue endpoints. Times are epoch milliseconds (BIGINT). `seq` orders the queue, from a sequence
-- (max(seq) + 1 would race between replicas); a retried job takes a new one (back of the queue).
-- input, output and progress stay JSON text: they are handed on byte for byte (see RawJson), never queried.
CREATE SEQUENCE job_queue_seq;
CREATE TABLE jobs (
  id TEXT PRIMARY KEY,
  endpoint_id TEXT NOT NULL,
  account_id TEXT NOT NULL,
  seq BIGINT NOT NULL DEFAULT nextval('job_queue_seq'),
  status TEXT NOT NULL CHECK (status IN ('IN_QUEUE', 'IN_PROGRESS', 'COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT')),
  input TEXT NOT NULL,
  webhook TEXT,
  policy TEXT,
  s3_config TEXT,
  sync BOOLEAN NOT NULL DEFAULT false,
  low_priority BOOLEAN NOT NULL DEFAULT false,
  execution_timeout_ms BIGINT NOT NULL,
  ttl_ms BIGINT NOT NULL,
  retention_ms BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  started_at BIGINT,
  completed_at BIGINT,
  expires_at BIGINT NOT NULL,
  retain_until BIGINT,
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

CREATE TABLE job_chunks (
  job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  output TEXT NOT NULL,
  PRIMARY KEY (job_id, seq)
);

-- Webhook notifications owed; kept after the job is gone so a restart resumes them. Attempts are jsonb so
-- that recording one is a single atomic append.
CREATE TABLE webhook_deliveries (
  id TEXT PRIMARY KEY,
  job_id TEXT NOT NULL,
  url TEXT NOT NULL,
  payload TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('PENDING', 'DELIVERED', 'FAILED')),
  attempts JSONB NOT NULL DEFAULT '[]',
  next_attempt_at BIGINT,
  created_at BIGINT NOT NULL
);
CREATE INDEX webhook_due ON webhook_deliveries(next_attempt_at) WHERE state = 'PENDING';
CREATE INDEX webhook_job ON webhook_deliveries(job_id);

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
  created_at BIGINT NOT NULL,
  started_at BIGINT,
  stopped_at BIGINT,
  last_error TEXT
);
CREATE INDEX workers_active ON workers(endpoint_id, state);
