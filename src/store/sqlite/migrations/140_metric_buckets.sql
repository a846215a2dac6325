-- Endpoint metrics in time buckets (1-minute and 1-hour), one row per replica that counted; readers add
-- the rows of every replica. `data` is the bucket's JSON (counters, histogram bins, gauge samples).
CREATE TABLE metric_buckets (
  endpoint_id TEXT NOT NULL,
  resolution TEXT NOT NULL CHECK (resolution IN ('minute', 'hour')),
  bucket INTEGER NOT NULL,
  replica TEXT NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (endpoint_id, resolution, bucket, replica)
) WITHOUT ROWID;
-- Retention deletes by age.
CREATE INDEX metric_buckets_age ON metric_buckets(resolution, bucket);
