-- Pods: the record as JSON text beside the columns lists and recovery filter on.
CREATE SEQUENCE pods_seq;
CREATE TABLE pods (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  cluster_id TEXT,
  status TEXT NOT NULL,
  data TEXT NOT NULL,
  created_at TEXT NOT NULL,
  seq BIGINT NOT NULL DEFAULT nextval('pods_seq')
);
CREATE INDEX pods_account ON pods(account_id, seq);
CREATE INDEX pods_cluster ON pods(cluster_id, seq) WHERE cluster_id IS NOT NULL;
