-- The audit log, as on SQLite (see its 160): appended, never updated; retention deletes rows by age.
CREATE TABLE audit_log (
  seq BIGSERIAL PRIMARY KEY,
  at BIGINT NOT NULL,
  account_id TEXT NOT NULL,
  actor_type TEXT NOT NULL,
  actor_id TEXT NOT NULL,
  action TEXT NOT NULL,
  resource_type TEXT NOT NULL,
  resource_id TEXT,
  outcome TEXT NOT NULL,
  status INTEGER NOT NULL,
  ip TEXT,
  request_id TEXT
);
CREATE INDEX audit_log_account ON audit_log(account_id, seq);
CREATE INDEX audit_log_at ON audit_log(at);
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the audit log is append-only';
END;
$$;
CREATE TRIGGER audit_log_append_only BEFORE UPDATE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
