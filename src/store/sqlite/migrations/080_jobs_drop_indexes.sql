-- Every job is inserted, taken and finished, and each write updates every index of jobs: two that no query
-- needs any more go (as on PostgreSQL, 080).
--   jobs_endpoint_status served counts, which JobCounters keeps in memory; purge and the queued tally use
--   jobs_queue, listInProgress and listTimedOut jobs_running.
--   jobs_seq served max(seq) for each new job's place in the queue: the store holds the next seq in memory
--   now (one process owns the file); an endpoint's newest jobs use jobs_endpoint_seq.
DROP INDEX jobs_endpoint_status;
DROP INDEX jobs_seq;
