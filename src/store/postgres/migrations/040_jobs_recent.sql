-- GET /v2/{id}/requests lists an endpoint's jobs newest first; without this it sorts all of them.
CREATE INDEX jobs_endpoint_seq ON jobs(endpoint_id, seq);
