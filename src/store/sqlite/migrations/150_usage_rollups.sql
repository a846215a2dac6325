-- Roll-ups of the usage ledger per UTC hour, day and month (grain), replacing the daily ones of 050: hour
-- histories read hour rows instead of intervals, month and year histories 12 rows a year instead of 365.
-- The cost of closed intervals per grain bucket and resource (parts, i.e. workers and cluster member pods,
-- summed into their resource), kept in the closing transaction; a row says the resource had use in the bucket
-- (whole months of these rows replace usage_monthly_resources). gpu_type_id is '' for none (a key column).
CREATE TABLE usage_rollup (
  account_id TEXT NOT NULL,
  product TEXT NOT NULL,
  grain TEXT NOT NULL CHECK (grain IN ('hour', 'day', 'month')),
  bucket INTEGER NOT NULL,
  resource_id TEXT NOT NULL,
  gpu_type_id TEXT NOT NULL,
  gpu INTEGER NOT NULL DEFAULT 0,
  cpu INTEGER NOT NULL DEFAULT 0,
  disk INTEGER NOT NULL DEFAULT 0,
  fee INTEGER NOT NULL DEFAULT 0,
  standard INTEGER NOT NULL DEFAULT 0,
  high_performance INTEGER NOT NULL DEFAULT 0,
  networking INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (account_id, product, grain, bucket, resource_id, gpu_type_id)
) WITHOUT ROWID;

-- The same sums per GPU type only, for histories that are not by resource (the aggregate, pods by GPU type):
-- a year of 100 pods on 4 GPU types is 1,460 day rows here against 36,500 above.
CREATE TABLE usage_rollup_gpu (
  account_id TEXT NOT NULL,
  product TEXT NOT NULL,
  grain TEXT NOT NULL CHECK (grain IN ('hour', 'day', 'month')),
  bucket INTEGER NOT NULL,
  gpu_type_id TEXT NOT NULL,
  gpu INTEGER NOT NULL DEFAULT 0,
  cpu INTEGER NOT NULL DEFAULT 0,
  disk INTEGER NOT NULL DEFAULT 0,
  fee INTEGER NOT NULL DEFAULT 0,
  standard INTEGER NOT NULL DEFAULT 0,
  high_performance INTEGER NOT NULL DEFAULT 0,
  networking INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (account_id, product, grain, bucket, gpu_type_id)
) WITHOUT ROWID;
-- Operator summaries read every account's rows of a range.
CREATE INDEX usage_rollup_gpu_by_bucket ON usage_rollup_gpu(grain, bucket);

-- Backfill from the ledger: each closed interval cut at UTC hours, each piece [a, b) of an interval begun at s
-- costing accrued(b - s) - accrued(a - s), the one rounding rule of domain/billing/money.ts:
-- accrued(e) = floor(price x e / period), computed as price x (e / period) + (price / period) x (e % period)
-- + (price % period) x (e % period) / period so that no product leaves 64 bits (period is at most 730 h).
-- Days and months are sums of whole hours: the pieces telescope, so they equal cutting at days and months.
WITH RECURSIVE piece(account_id, product, component, resource_id, gpu_type_id, p, t, s, e, a) AS (
  SELECT account_id, product, component, resource_id, coalesce(gpu_type_id, ''), price_micros, period_ms, started_at, ended_at, started_at
  FROM usage_intervals WHERE ended_at > started_at
  UNION ALL
  SELECT account_id, product, component, resource_id, gpu_type_id, p, t, s, e, a - a % 3600000 + 3600000
  FROM piece WHERE a - a % 3600000 + 3600000 < e
),
elapsed AS (
  SELECT account_id, product, component, resource_id, gpu_type_id, p, t, a - a % 3600000 AS bucket,
    a - s AS ea, min(e, a - a % 3600000 + 3600000) - s AS eb
  FROM piece
),
cost AS (
  SELECT account_id, product, component, resource_id, gpu_type_id, bucket,
    (p * (eb / t) + (p / t) * (eb % t) + ((p % t) * (eb % t)) / t) - (p * (ea / t) + (p / t) * (ea % t) + ((p % t) * (ea % t)) / t) AS amount
  FROM elapsed
)
INSERT INTO usage_rollup (account_id, product, grain, bucket, resource_id, gpu_type_id, gpu, cpu, disk, fee, standard, high_performance, networking)
SELECT account_id, product, 'hour', bucket, resource_id, gpu_type_id,
  sum(CASE component WHEN 'gpu' THEN amount ELSE 0 END), sum(CASE component WHEN 'cpu' THEN amount ELSE 0 END),
  sum(CASE component WHEN 'disk' THEN amount ELSE 0 END), sum(CASE component WHEN 'fee' THEN amount ELSE 0 END),
  sum(CASE component WHEN 'standard' THEN amount ELSE 0 END), sum(CASE component WHEN 'highPerformance' THEN amount ELSE 0 END),
  sum(CASE component WHEN 'networking' THEN amount ELSE 0 END)
FROM cost GROUP BY account_id, product, bucket, resource_id, gpu_type_id;

INSERT INTO usage_rollup (account_id, product, grain, bucket, resource_id, gpu_type_id, gpu, cpu, disk, fee, standard, high_performance, networking)
SELECT account_id, product, 'day', bucket - bucket % 86400000 AS day, resource_id, gpu_type_id,
  sum(gpu), sum(cpu), sum(disk), sum(fee), sum(standard), sum(high_performance), sum(networking)
FROM usage_rollup WHERE grain = 'hour' GROUP BY account_id, product, day, resource_id, gpu_type_id;

INSERT INTO usage_rollup (account_id, product, grain, bucket, resource_id, gpu_type_id, gpu, cpu, disk, fee, standard, high_performance, networking)
SELECT account_id, product, 'month', CAST(strftime('%s', bucket / 1000, 'unixepoch', 'start of month') AS INTEGER) * 1000 AS month, resource_id, gpu_type_id,
  sum(gpu), sum(cpu), sum(disk), sum(fee), sum(standard), sum(high_performance), sum(networking)
FROM usage_rollup WHERE grain = 'day' GROUP BY account_id, product, month, resource_id, gpu_type_id;

INSERT INTO usage_rollup_gpu (account_id, product, grain, bucket, gpu_type_id, gpu, cpu, disk, fee, standard, high_performance, networking)
SELECT account_id, product, grain, bucket, gpu_type_id, sum(gpu), sum(cpu), sum(disk), sum(fee), sum(standard), sum(high_performance), sum(networking)
FROM usage_rollup GROUP BY account_id, product, grain, bucket, gpu_type_id;

DROP TABLE IF EXISTS usage_daily;
DROP TABLE IF EXISTS usage_daily_gpu;
DROP TABLE IF EXISTS usage_monthly_resources;
