-- Roll-ups of the usage ledger per UTC hour, day and month, replacing the daily ones of 050, as on SQLite
-- (see its 150 for the reasons of each table and of the backfill's arithmetic).
CREATE TABLE usage_rollup (
  account_id TEXT NOT NULL,
  product TEXT NOT NULL,
  grain TEXT NOT NULL CHECK (grain IN ('hour', 'day', 'month')),
  bucket BIGINT NOT NULL,
  resource_id TEXT NOT NULL,
  gpu_type_id TEXT NOT NULL,
  gpu BIGINT NOT NULL DEFAULT 0,
  cpu BIGINT NOT NULL DEFAULT 0,
  disk BIGINT NOT NULL DEFAULT 0,
  fee BIGINT NOT NULL DEFAULT 0,
  standard BIGINT NOT NULL DEFAULT 0,
  high_performance BIGINT NOT NULL DEFAULT 0,
  networking BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (account_id, product, grain, bucket, resource_id, gpu_type_id)
);

CREATE TABLE usage_rollup_gpu (
  account_id TEXT NOT NULL,
  product TEXT NOT NULL,
  grain TEXT NOT NULL CHECK (grain IN ('hour', 'day', 'month')),
  bucket BIGINT NOT NULL,
  gpu_type_id TEXT NOT NULL,
  gpu BIGINT NOT NULL DEFAULT 0,
  cpu BIGINT NOT NULL DEFAULT 0,
  disk BIGINT NOT NULL DEFAULT 0,
  fee BIGINT NOT NULL DEFAULT 0,
  standard BIGINT NOT NULL DEFAULT 0,
  high_performance BIGINT NOT NULL DEFAULT 0,
  networking BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (account_id, product, grain, bucket, gpu_type_id)
);
CREATE INDEX usage_rollup_gpu_by_bucket ON usage_rollup_gpu(grain, bucket);

-- Backfill: each closed interval cut at UTC hours, piece [a, b) of an interval begun at s costing
-- accrued(b - s) - accrued(a - s) (domain/billing/money.ts), days and months summed from whole hours.
WITH elapsed AS (
  SELECT i.account_id, i.product, i.component, i.resource_id, coalesce(i.gpu_type_id, '') AS gpu_type_id,
    i.price_micros AS p, i.period_ms AS t, h AS bucket,
    greatest(i.started_at, h) - i.started_at AS ea, least(i.ended_at, h + 3600000) - i.started_at AS eb
  FROM usage_intervals i
  CROSS JOIN LATERAL generate_series(i.started_at - i.started_at % 3600000, i.ended_at - 1, 3600000::bigint) AS h
  WHERE i.ended_at > i.started_at
),
cost AS (
  SELECT account_id, product, component, resource_id, gpu_type_id, bucket,
    (p * (eb / t) + (p / t) * (eb % t) + ((p % t) * (eb % t)) / t) - (p * (ea / t) + (p / t) * (ea % t) + ((p % t) * (ea % t)) / t) AS amount
  FROM elapsed
)
INSERT INTO usage_rollup (account_id, product, grain, bucket, resource_id, gpu_type_id, gpu, cpu, disk, fee, standard, high_performance, networking)
SELECT account_id, product, 'hour', bucket, resource_id, gpu_type_id,
  coalesce(sum(amount) FILTER (WHERE component = 'gpu'), 0), coalesce(sum(amount) FILTER (WHERE component = 'cpu'), 0),
  coalesce(sum(amount) FILTER (WHERE component = 'disk'), 0), coalesce(sum(amount) FILTER (WHERE component = 'fee'), 0),
  coalesce(sum(amount) FILTER (WHERE component = 'standard'), 0), coalesce(sum(amount) FILTER (WHERE component = 'highPerformance'), 0),
  coalesce(sum(amount) FILTER (WHERE component = 'networking'), 0)
FROM cost GROUP BY account_id, product, bucket, resource_id, gpu_type_id;

INSERT INTO usage_rollup (account_id, product, grain, bucket, resource_id, gpu_type_id, gpu, cpu, disk, fee, standard, high_performance, networking)
SELECT account_id, product, 'day', bucket - bucket % 86400000 AS day, resource_id, gpu_type_id,
  sum(gpu), sum(cpu), sum(disk), sum(fee), sum(standard), sum(high_performance), sum(networking)
FROM usage_rollup WHERE grain = 'hour' GROUP BY account_id, product, day, resource_id, gpu_type_id;

INSERT INTO usage_rollup (account_id, product, grain, bucket, resource_id, gpu_type_id, gpu, cpu, disk, fee, standard, high_performance, networking)
SELECT account_id, product, 'month', (extract(epoch FROM date_trunc('month', to_timestamp(bucket / 1000) AT TIME ZONE 'UTC')) * 1000)::bigint AS month, resource_id, gpu_type_id,
  sum(gpu), sum(cpu), sum(disk), sum(fee), sum(standard), sum(high_performance), sum(networking)
FROM usage_rollup WHERE grain = 'day' GROUP BY account_id, product, month, resource_id, gpu_type_id;

INSERT INTO usage_rollup_gpu (account_id, product, grain, bucket, gpu_type_id, gpu, cpu, disk, fee, standard, high_performance, networking)
SELECT account_id, product, grain, bucket, gpu_type_id, sum(gpu), sum(cpu), sum(disk), sum(fee), sum(standard), sum(high_performance), sum(networking)
FROM usage_rollup GROUP BY account_id, product, grain, bucket, gpu_type_id;

DROP TABLE IF EXISTS usage_daily;
DROP TABLE IF EXISTS usage_daily_gpu;
DROP TABLE IF EXISTS usage_monthly_resources;
