-- When each stage of the server-side pipeline was done with an upload, on the receipt row the
-- splitter writes anyway (one Date.now() per upload and per group, no query): consumed_at, the
-- splitter handed the body to the CPU pool (before it, the upload waited on the log); parsed_at,
-- the pool gave its events back; processed_at (002) is when its group was attributed; written_at,
-- its group's write returned (embedded: its events inserted into `events`; Kafka + ClickHouse:
-- durable on the events topic); recorded_at, its group's receipts insert began, after its write
-- and rejected lines. The receipt (`GET /v0/uploads/:transaction_id`) shows them, and the
-- bench's freshness scenario splits each upload's time from its 202 by them. NULL on rows written
-- before, and on SDK receipts.
ALTER TABLE upload_receipts ADD COLUMN IF NOT EXISTS consumed_at Nullable(DateTime64(3, 'UTC')) AFTER received_at;
ALTER TABLE upload_receipts ADD COLUMN IF NOT EXISTS parsed_at Nullable(DateTime64(3, 'UTC')) AFTER consumed_at;
ALTER TABLE upload_receipts ADD COLUMN IF NOT EXISTS written_at Nullable(DateTime64(3, 'UTC')) AFTER processed_at;
ALTER TABLE upload_receipts ADD COLUMN IF NOT EXISTS recorded_at Nullable(DateTime64(3, 'UTC')) AFTER written_at;
