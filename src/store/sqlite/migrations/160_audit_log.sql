-- The audit log (issue 36): one row per change made through the API, appended and never updated; retention
-- deletes rows by age. No foreign key to accounts: the record of a deleted account's actions stays.
CREATE TABLE audit_log (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  at INTEGER NOT NULL,
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
CREATE TRIGGER audit_log_append_only BEFORE UPDATE ON audit_log
BEGIN
  SELECT RAISE(ABORT, 'the audit log is append-only');
END;
