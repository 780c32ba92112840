-- The exactly-once index, rebuilt with small granules: `event_uuid_index` replaces `event_uuids`.
-- A look-up of k random uuids reads the granule of each: k x index_granularity rows. With the
-- default 8,192 a writer batch of 2,000 keys read 16M rows (a core's worth at 2,000 events/s
-- once the index outgrew that), whatever the batch's size relative to the index. With 256 rows
-- per granule and small compressed blocks, 500 random keys against 6M rows cost 37 ms of engine
-- time instead of 157, and the cost stops growing with the index once it holds more than
-- k x 256 rows. Primary key memory grows to ~0.2 bytes per indexed event.
-- index_granularity cannot be changed on an existing table, hence a new one: its view starts
-- indexing new events first, then the old index is copied in; migration 007 drops the old one.
-- (Two migrations, so that a crash half-way can re-run this one: the copy needs the old table,
-- and copying twice is harmless to a ReplacingMergeTree whose readers take the earliest row.)
CREATE TABLE IF NOT EXISTS event_uuid_index
(
    app_id LowCardinality(String),
    uuid String,
    transaction_id String,
    received_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree
ORDER BY (app_id, uuid)
TTL toDateTime(received_at) + INTERVAL 8 DAY
SETTINGS index_granularity = 256, min_compress_block_size = 4096, max_compress_block_size = 16384;

CREATE MATERIALIZED VIEW IF NOT EXISTS event_uuid_index_mv TO event_uuid_index AS
SELECT app_id, uuid, transaction_id, received_at FROM events;

INSERT INTO event_uuid_index (app_id, uuid, transaction_id, received_at)
SELECT app_id, uuid, transaction_id, received_at FROM event_uuids;
