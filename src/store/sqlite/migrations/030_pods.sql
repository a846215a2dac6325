-- Pods: the record is JSON (its shape is defined by domain/pods/pod.ts and changes with the contract); the
-- columns beside it are what lists and recovery filter on.
CREATE TABLE pods (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  cluster_id TEXT,
  status TEXT NOT NULL,
  data TEXT NOT NULL,
  created_at TEXT NOT NULL,
  seq INTEGER NOT NULL
);
CREATE INDEX pods_account ON pods(account_id, seq);
CREATE INDEX pods_cluster ON pods(cluster_id, seq) WHERE cluster_id IS NOT NULL;
