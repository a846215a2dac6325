-- Quotas and fair-share settings per account (issue 36); no row: no limits, weight 1.
CREATE TABLE account_quotas (
  account_id TEXT PRIMARY KEY REFERENCES accounts(id),
  gpus INTEGER,
  workers INTEGER,
  pods INTEGER,
  network_volume_gb INTEGER,
  spend_per_hour_micros BIGINT,
  spend_per_month_micros BIGINT,
  at_spend_limit TEXT NOT NULL DEFAULT 'FINISH' CHECK (at_spend_limit IN ('FINISH', 'STOP')),
  guaranteed_gpus INTEGER,
  weight INTEGER NOT NULL DEFAULT 1 CHECK (weight >= 1),
  updated_at TEXT NOT NULL
);
