-- Members and roles (issue 36, item 3): people of an account with a role, their sessions, their own keys and
-- invitations by link. Tokens and keys are stored as sha256 only; passwords as scrypt hashes.
CREATE TABLE members (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  email TEXT NOT NULL UNIQUE,
  name TEXT,
  role TEXT NOT NULL,
  password_hash TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX members_account ON members(account_id, created_at);
CREATE TABLE member_sessions (
  id TEXT PRIMARY KEY,
  member_id TEXT NOT NULL REFERENCES members(id) ON DELETE CASCADE,
  account_id TEXT NOT NULL,
  token_hash TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  revoked_at TEXT,
  ip TEXT
);
CREATE INDEX member_sessions_member ON member_sessions(member_id);
CREATE TABLE member_keys (
  id TEXT PRIMARY KEY,
  member_id TEXT NOT NULL REFERENCES members(id) ON DELETE CASCADE,
  account_id TEXT NOT NULL,
  name TEXT,
  role TEXT NOT NULL,
  hash TEXT NOT NULL UNIQUE,
  prefix TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT,
  revoked_at TEXT
);
CREATE INDEX member_keys_member ON member_keys(member_id, created_at);
CREATE TABLE invitations (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  role TEXT NOT NULL,
  created_by TEXT NOT NULL,
  token_hash TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  accepted_at TEXT,
  member_id TEXT,
  revoked_at TEXT
);
CREATE INDEX invitations_account ON invitations(account_id, created_at);
