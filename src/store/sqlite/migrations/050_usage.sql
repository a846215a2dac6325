-- The usage ledger (billing). Times are epoch milliseconds, money integer micro-dollars.
-- One row per interval of billed use; ended_at NULL while it runs.
CREATE TABLE usage_intervals (
  id INTEGER PRIMARY KEY,
  account_id TEXT NOT NULL,
  product TEXT NOT NULL CHECK (product IN ('pod', 'serverless', 'volume', 'cluster', 'endpoint')),
  component TEXT NOT NULL CHECK (component IN ('gpu', 'cpu', 'disk', 'fee', 'standard', 'highPerformance', 'networking')),
  resource_id TEXT NOT NULL,
  part_id TEXT,
  gpu_type_id TEXT,
  quantity REAL NOT NULL,
  price_micros INTEGER NOT NULL,
  period_ms INTEGER NOT NULL,
  started_at INTEGER NOT NULL,
  ended_at INTEGER,
  CHECK (ended_at IS NULL OR ended_at >= started_at)
);
-- Histories read closed intervals by the end of the range they ask for; open ones are few and read apart.
CREATE INDEX usage_intervals_closed ON usage_intervals(account_id, product, ended_at) WHERE ended_at IS NOT NULL;
CREATE INDEX usage_intervals_open ON usage_intervals(started_at) WHERE ended_at IS NULL;

-- The cost of closed intervals per UTC day and resource, kept in the closing transaction: day, week, month and
-- year histories sum these rows instead of reading every interval. Parts (workers, cluster member pods) are
-- summed into their resource, so a year of an endpoint is 365 rows however many workers it ran; histories by
-- worker read the intervals. gpu_type_id is '' for none (a key column).
CREATE TABLE usage_daily (
  account_id TEXT NOT NULL,
  product TEXT NOT NULL,
  day INTEGER NOT NULL,
  resource_id TEXT NOT NULL,
  gpu_type_id TEXT NOT NULL,
  gpu INTEGER NOT NULL DEFAULT 0,
  cpu INTEGER NOT NULL DEFAULT 0,
  disk INTEGER NOT NULL DEFAULT 0,
  fee INTEGER NOT NULL DEFAULT 0,
  standard INTEGER NOT NULL DEFAULT 0,
  high_performance INTEGER NOT NULL DEFAULT 0,
  networking INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (account_id, product, day, resource_id, gpu_type_id)
) WITHOUT ROWID;
CREATE INDEX usage_daily_by_day ON usage_daily(day);

-- The same sums per GPU type only, for histories that are not by resource (the aggregate, pods by GPU type):
-- a year of 100 pods on 4 GPU types is 1,460 rows here against 36,500 above.
CREATE TABLE usage_daily_gpu (
  account_id TEXT NOT NULL,
  product TEXT NOT NULL,
  day INTEGER NOT NULL,
  gpu_type_id TEXT NOT NULL,
  gpu INTEGER NOT NULL DEFAULT 0,
  cpu INTEGER NOT NULL DEFAULT 0,
  disk INTEGER NOT NULL DEFAULT 0,
  fee INTEGER NOT NULL DEFAULT 0,
  standard INTEGER NOT NULL DEFAULT 0,
  high_performance INTEGER NOT NULL DEFAULT 0,
  networking INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (account_id, product, day, gpu_type_id)
) WITHOUT ROWID;
CREATE INDEX usage_daily_gpu_by_day ON usage_daily_gpu(day);

-- Which resources had closed use in which UTC month (ms of its first day), for unique counts over long ranges.
CREATE TABLE usage_monthly_resources (
  account_id TEXT NOT NULL,
  product TEXT NOT NULL,
  month INTEGER NOT NULL,
  resource_id TEXT NOT NULL,
  PRIMARY KEY (account_id, product, month, resource_id)
) WITHOUT ROWID;

-- When the control plane last noted it was alive (key 'alive').
CREATE TABLE usage_marks (key TEXT PRIMARY KEY, at INTEGER NOT NULL);
