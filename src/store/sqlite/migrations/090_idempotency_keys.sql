-- Idempotency-Key of /run and /runsync: the job a key named, per account and endpoint, kept for the
-- retention window (longer than a finished job is kept). The primary key makes a second claim of a live key
-- impossible; an expired row is replaced by the next claim, and swept.
CREATE TABLE idempotency_keys (
  account_id TEXT NOT NULL,
  endpoint_id TEXT NOT NULL,
  key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  job_id TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (account_id, endpoint_id, key)
) WITHOUT ROWID;
CREATE INDEX idempotency_keys_expires ON idempotency_keys(expires_at);
