-- Endpoint metrics in time buckets, as on SQLite (see its 140).
CREATE TABLE metric_buckets (
  endpoint_id TEXT NOT NULL,
  resolution TEXT NOT NULL CHECK (resolution IN ('minute', 'hour')),
  bucket BIGINT NOT NULL,
  replica TEXT NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (endpoint_id, resolution, bucket, replica)
);
CREATE INDEX metric_buckets_age ON metric_buckets(resolution, bucket);
