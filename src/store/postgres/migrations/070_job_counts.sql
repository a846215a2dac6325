-- Job counts per endpoint without counting the jobs table. Every statement that inserts, updates or
-- deletes jobs adds one row per endpoint it touched with what it changed (statement-level triggers over
-- transition tables: no row of its own per job, and no shared row that concurrent writers would queue on).
-- An endpoint's counts are the sum of its rows; PgJobStore folds the rows of an endpoint into one now and
-- then. Before this, counts() and the scaler's activeEndpoints() counted every job kept (finished ones
-- included) on every call, which grew with the table and, under a steady stream of jobs, kept a backend busy.
CREATE TABLE job_counts (
  endpoint_id TEXT NOT NULL,
  in_queue BIGINT NOT NULL,
  in_queue_low BIGINT NOT NULL,
  in_progress BIGINT NOT NULL,
  completed BIGINT NOT NULL,
  failed BIGINT NOT NULL,
  retried BIGINT NOT NULL
);
CREATE INDEX job_counts_endpoint ON job_counts(endpoint_id);

INSERT INTO job_counts
SELECT endpoint_id,
  count(*) FILTER (WHERE status = 'IN_QUEUE'),
  count(*) FILTER (WHERE status = 'IN_QUEUE' AND low_priority),
  count(*) FILTER (WHERE status = 'IN_PROGRESS'),
  count(*) FILTER (WHERE status = 'COMPLETED'),
  count(*) FILTER (WHERE status IN ('FAILED', 'TIMED_OUT')),
  coalesce(sum(retries), 0)
FROM jobs GROUP BY endpoint_id;

-- The deltas of a statement, per endpoint: d holds (s, endpoint_id, status, low_priority, retries) with
-- s = +1 for a new row image, -1 for an old one.
CREATE FUNCTION job_counts_on_insert() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO job_counts
  SELECT endpoint_id, count(*) FILTER (WHERE status = 'IN_QUEUE'), count(*) FILTER (WHERE status = 'IN_QUEUE' AND low_priority),
    count(*) FILTER (WHERE status = 'IN_PROGRESS'), count(*) FILTER (WHERE status = 'COMPLETED'),
    count(*) FILTER (WHERE status IN ('FAILED', 'TIMED_OUT')), coalesce(sum(retries), 0)
  FROM new_jobs GROUP BY endpoint_id;
  RETURN NULL;
END $$;

CREATE FUNCTION job_counts_on_delete() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO job_counts
  SELECT endpoint_id, -count(*) FILTER (WHERE status = 'IN_QUEUE'), -count(*) FILTER (WHERE status = 'IN_QUEUE' AND low_priority),
    -count(*) FILTER (WHERE status = 'IN_PROGRESS'), -count(*) FILTER (WHERE status = 'COMPLETED'),
    -count(*) FILTER (WHERE status IN ('FAILED', 'TIMED_OUT')), -coalesce(sum(retries), 0)
  FROM old_jobs GROUP BY endpoint_id;
  RETURN NULL;
END $$;

CREATE FUNCTION job_counts_on_update() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO job_counts
  SELECT endpoint_id, coalesce(q, 0), coalesce(ql, 0), coalesce(p, 0), coalesce(c, 0), coalesce(f, 0), r FROM (
    SELECT endpoint_id, sum(s) FILTER (WHERE status = 'IN_QUEUE') AS q, sum(s) FILTER (WHERE status = 'IN_QUEUE' AND low_priority) AS ql,
      sum(s) FILTER (WHERE status = 'IN_PROGRESS') AS p, sum(s) FILTER (WHERE status = 'COMPLETED') AS c,
      sum(s) FILTER (WHERE status IN ('FAILED', 'TIMED_OUT')) AS f, sum(s * retries) AS r
    FROM (SELECT 1 AS s, endpoint_id, status, low_priority, retries FROM new_jobs
          UNION ALL SELECT -1, endpoint_id, status, low_priority, retries FROM old_jobs) d
    GROUP BY endpoint_id
  ) t (endpoint_id, q, ql, p, c, f, r)
  -- Moves that change no count (progress, TTL) add nothing.
  WHERE coalesce(q, 0) <> 0 OR coalesce(ql, 0) <> 0 OR coalesce(p, 0) <> 0 OR coalesce(c, 0) <> 0 OR coalesce(f, 0) <> 0 OR r <> 0;
  RETURN NULL;
END $$;
CREATE TRIGGER jobs_counts_insert AFTER INSERT ON jobs REFERENCING NEW TABLE AS new_jobs FOR EACH STATEMENT EXECUTE FUNCTION job_counts_on_insert();
CREATE TRIGGER jobs_counts_delete AFTER DELETE ON jobs REFERENCING OLD TABLE AS old_jobs FOR EACH STATEMENT EXECUTE FUNCTION job_counts_on_delete();
CREATE TRIGGER jobs_counts_update AFTER UPDATE ON jobs REFERENCING OLD TABLE AS old_jobs NEW TABLE AS new_jobs FOR EACH STATEMENT EXECUTE FUNCTION job_counts_on_update();
