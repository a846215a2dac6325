-- Same numbers as the SQLite migrations (src/store/sqlite/migrations); times are ISO text here as there.
CREATE TABLE accounts (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  rate_limit_exempt BOOLEAN NOT NULL DEFAULT false,
  created_at TEXT NOT NULL
);

CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  name TEXT,
  hash TEXT NOT NULL UNIQUE,
  prefix TEXT NOT NULL,
  permission TEXT NOT NULL CHECK (permission IN ('ALL', 'READ_ONLY', 'RESTRICTED')),
  endpoint_ids TEXT NOT NULL DEFAULT '[]',
  admin BOOLEAN NOT NULL DEFAULT false,
  expires_at TEXT,
  revoked_at TEXT,
  last_used_at TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX api_keys_account ON api_keys(account_id);
