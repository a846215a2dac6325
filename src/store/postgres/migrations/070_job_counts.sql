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

-- What one job row contributes (sign +1 for a new row image, -1 for an old one).
CREATE FUNCTION job_counts_add(s INTEGER, status TEXT, low_priority BOOLEAN, retries INTEGER,
  OUT in_queue BIGINT, OUT in_queue_low BIGINT, OUT in_progress BIGINT, OUT completed BIGINT, OUT failed BIGINT, OUT retried BIGINT)
LANGUAGE sql IMMUTABLE AS $$
  SELECT (s * (status = 'IN_QUEUE')::int)::bigint, (s * (status = 'IN_QUEUE' AND low_priority)::int)::bigint,
    (s * (status = 'IN_PROGRESS')::int)::bigint, (s * (status = 'COMPLETED')::int)::bigint,
    (s * (status IN ('FAILED', 'TIMED_OUT'))::int)::bigint, (s * retries)::bigint
$$;

CREATE FUNCTION job_counts_on_insert() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO job_counts
  SELECT n.endpoint_id, sum(c.in_queue), sum(c.in_queue_low), sum(c.in_progress), sum(c.completed), sum(c.failed), sum(c.retried)
  FROM new_jobs n, job_counts_add(1, n.status, n.low_priority, n.retries) c GROUP BY n.endpoint_id;
  RETURN NULL;
END $$;

CREATE FUNCTION job_counts_on_delete() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO job_counts
  SELECT o.endpoint_id, sum(c.in_queue), sum(c.in_queue_low), sum(c.in_progress), sum(c.completed), sum(c.failed), sum(c.retried)
  FROM old_jobs o, job_counts_add(-1, o.status, o.low_priority, o.retries) c GROUP BY o.endpoint_id;
  RETURN NULL;
END $$;

CREATE FUNCTION job_counts_on_update() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO job_counts
  SELECT d.endpoint_id, sum(d.in_queue), sum(d.in_queue_low), sum(d.in_progress), sum(d.completed), sum(d.failed), sum(d.retried)
  FROM (
    SELECT n.endpoint_id, c.* FROM new_jobs n, job_counts_add(1, n.status, n.low_priority, n.retries) c
    UNION ALL
    SELECT o.endpoint_id, c.* FROM old_jobs o, job_counts_add(-1, o.status, o.low_priority, o.retries) c
  ) d GROUP BY d.endpoint_id
  -- Moves that change no count (progress, TTL) add nothing.
  HAVING sum(d.in_queue) <> 0 OR sum(d.in_queue_low) <> 0 OR sum(d.in_progress) <> 0 OR sum(d.completed) <> 0 OR sum(d.failed) <> 0 OR sum(d.retried) <> 0;
  RETURN NULL;
END $$;

CREATE TRIGGER jobs_counts_insert AFTER INSERT ON jobs REFERENCING NEW TABLE AS new_jobs FOR EACH STATEMENT EXECUTE FUNCTION job_counts_on_insert();
CREATE TRIGGER jobs_counts_delete AFTER DELETE ON jobs REFERENCING OLD TABLE AS old_jobs FOR EACH STATEMENT EXECUTE FUNCTION job_counts_on_delete();
CREATE TRIGGER jobs_counts_update AFTER UPDATE ON jobs REFERENCING OLD TABLE AS old_jobs NEW TABLE AS new_jobs FOR EACH STATEMENT EXECUTE FUNCTION job_counts_on_update();
