-- Every move of a job (take, finish) changes indexed columns, so PostgreSQL writes a new entry into every
-- index of jobs on each one: two indexes that no query needs any more go.
--   jobs_endpoint_status served the counts, which job_counts keeps now (070); purgeQueued uses jobs_queue,
--   listInProgress and listTimedOut use jobs_running.
--   jobs_seq: queue order is jobs_queue's, an endpoint's newest jobs jobs_endpoint_seq's.
DROP INDEX jobs_endpoint_status;
DROP INDEX jobs_seq;
