-- Owned management resources (templates, registries, network volumes, endpoints, releases) as JSON
-- documents: their shapes are defined by contract/ and change more often than their access paths.
CREATE TABLE documents (
  kind TEXT NOT NULL,
  id TEXT NOT NULL,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  parent_id TEXT,
  public INTEGER NOT NULL DEFAULT 0,
  data TEXT NOT NULL,
  created_at TEXT NOT NULL,
  seq INTEGER NOT NULL,
  PRIMARY KEY (kind, id)
);
CREATE INDEX documents_account ON documents(kind, account_id, seq);
CREATE INDEX documents_parent ON documents(kind, parent_id, seq);
CREATE INDEX documents_public ON documents(kind, public, seq) WHERE public = 1;
