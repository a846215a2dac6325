-- The endpoint a webhook delivery belongs to: its attempts are signed with that endpoint's secret, read when
-- each attempt is made (the job may be gone by then). Deliveries recorded before stay unsigned.
ALTER TABLE webhook_deliveries ADD COLUMN endpoint_id TEXT;
