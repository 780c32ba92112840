-- Events (server-side and SDK), the dedupe index, upload receipts and rejected lines,
-- and the SDK-built state: raw log rows, sessions, devices, customers' last device.

-- The analysts' main table: one row per accepted event. Column names are a public contract.
CREATE TABLE IF NOT EXISTS events
(
    app_id LowCardinality(String),
    uuid String,
    customer_id String,
    event_name LowCardinality(String),
    event_time DateTime64(3, 'UTC'),
    received_at DateTime64(3, 'UTC'),
    attributes Map(String, String),
    ltv_change Int64,
    install_uuid String,
    device_uuid String,
    session_uuid String,
    country LowCardinality(String),
    language LowCardinality(String),
    app_version LowCardinality(String),
    os_version LowCardinality(String),
    platform LowCardinality(String),
    model LowCardinality(String),
    device_timezone LowCardinality(String),
    source LowCardinality(String),
    transaction_id String,
    INDEX idx_received_at received_at TYPE minmax GRANULARITY 1
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(event_time)
ORDER BY (app_id, event_name, event_time, uuid);

-- Which (app, uuid) pairs are stored, for the exactly-once check. Filled by the view below in the
-- same INSERT as the events. Kept 8 days: a copy sent later is outside the event_time window anyway.
CREATE TABLE IF NOT EXISTS event_uuids
(
    app_id LowCardinality(String),
    uuid String,
    transaction_id String,
    received_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree
ORDER BY (app_id, uuid)
TTL toDateTime(received_at) + INTERVAL 8 DAY;

CREATE MATERIALIZED VIEW IF NOT EXISTS event_uuids_mv TO event_uuids AS
SELECT app_id, uuid, transaction_id, received_at FROM events;

-- One row per processed upload (server-side or SDK), written when its lines have been split,
-- validated and forwarded. `forwarded` event lines then go through the exactly-once store stage;
-- `direct` lines (SDK sessions and closes) were stored by the splitter itself.
CREATE TABLE IF NOT EXISTS upload_receipts
(
    transaction_id String,
    org_id UInt64,
    app_id String,
    source LowCardinality(String),
    api_key String,
    received_at DateTime64(3, 'UTC'),
    processed_at DateTime64(3, 'UTC'),
    lines UInt32,
    forwarded UInt32,
    direct UInt32,
    rejected UInt32
)
ENGINE = ReplacingMergeTree
ORDER BY transaction_id
TTL toDateTime(received_at) + INTERVAL 30 DAY;

-- Every rejected line with its reason: what Localytics never told a sender.
CREATE TABLE IF NOT EXISTS rejected_lines
(
    transaction_id String,
    org_id UInt64,
    app_id String,
    source LowCardinality(String),
    line UInt32,
    uuid Nullable(String),
    reason LowCardinality(String),
    detail String,
    received_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree
ORDER BY (transaction_id, line)
TTL toDateTime(received_at) + INTERVAL 30 DAY;

-- Raw SDK log rows as uploaded (sessions, events, closes): what the hourly log export reads.
CREATE TABLE IF NOT EXISTS raw_log
(
    app_id LowCardinality(String),
    type LowCardinality(String),
    uuid String,
    at DateTime64(3, 'UTC'),
    install_uuid String,
    device_uuid String,
    session_uuid String,
    customer_id String,
    name String,
    attributes Map(String, String),
    app_ver LowCardinality(String),
    os_ver LowCardinality(String),
    platform LowCardinality(String),
    model LowCardinality(String),
    country LowCardinality(String),
    language LowCardinality(String),
    device_timezone LowCardinality(String),
    push_status LowCardinality(String),
    row String,
    transaction_id String,
    received_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMMDD(at)
ORDER BY (app_id, toStartOfHour(at), type, uuid)
TTL toDateTime(at) + INTERVAL 30 DAY;

-- Sessions, one row per session start.
CREATE TABLE IF NOT EXISTS sessions
(
    app_id LowCardinality(String),
    session_uuid String,
    install_uuid String,
    customer_id String,
    started_at DateTime64(3, 'UTC'),
    app_ver LowCardinality(String),
    os_ver LowCardinality(String),
    platform LowCardinality(String),
    country LowCardinality(String)
)
ENGINE = ReplacingMergeTree
ORDER BY (app_id, session_uuid);

-- Last known state of each install (device) of an app.
CREATE TABLE IF NOT EXISTS devices
(
    app_id LowCardinality(String),
    install_uuid String,
    device_uuid String,
    customer_id String,
    last_active_at DateTime64(3, 'UTC'),
    app_version String,
    os_version String,
    platform String,
    model String,
    country String,
    language String,
    device_timezone String,
    push_token String,
    push_status String,
    version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (app_id, install_uuid);

-- Each customer's last active device in an app, with that device's last dimensions: what
-- server-side events are attributed to, and what the auto-profile reads.
CREATE TABLE IF NOT EXISTS customer_devices
(
    app_id LowCardinality(String),
    customer_id String,
    install_uuid String,
    device_uuid String,
    session_uuid String,
    last_active_at DateTime64(3, 'UTC'),
    first_session_at Nullable(DateTime64(3, 'UTC')),
    last_session_at Nullable(DateTime64(3, 'UTC')),
    app_version String,
    os_version String,
    platform String,
    model String,
    country String,
    language String,
    device_timezone String,
    push_token String,
    push_status String,
    user_type String,
    version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (app_id, customer_id);
