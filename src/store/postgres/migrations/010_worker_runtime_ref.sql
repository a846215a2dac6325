-- Workers are named by an opaque runtime reference and the host they run on, not by a local pid.
ALTER TABLE workers ADD COLUMN host_id TEXT;
ALTER TABLE workers ADD COLUMN runtime_ref TEXT;
UPDATE workers
  SET runtime_ref = 'process:local:' || pid || ':' || pid_marker || ':worker:' || id, host_id = 'local'
  WHERE pid IS NOT NULL AND pid_marker IS NOT NULL;
ALTER TABLE workers DROP COLUMN pid;
ALTER TABLE workers DROP COLUMN pid_marker;
