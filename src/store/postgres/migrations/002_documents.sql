-- Owned management resources as JSON documents, as on SQLite. `data` is the JSON text as written (not jsonb,
-- which would reorder keys); the few queries that look inside cast it.
CREATE SEQUENCE documents_seq;
CREATE TABLE documents (
  kind TEXT NOT NULL,
  id TEXT NOT NULL,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  parent_id TEXT,
  public BOOLEAN NOT NULL DEFAULT false,
  data TEXT NOT NULL,
  created_at TEXT NOT NULL,
  seq BIGINT NOT NULL DEFAULT nextval('documents_seq'),
  PRIMARY KEY (kind, id)
);
CREATE INDEX documents_account ON documents(kind, account_id, seq);
CREATE INDEX documents_parent ON documents(kind, parent_id, seq);
CREATE INDEX documents_public ON documents(kind, public, seq) WHERE public;
