-- Exports (docs/exports.md): audience, profile and hourly raw-log exports, their files and the
-- bookkeeping of requests; plus what the exports need of tables that already exist.

-- Control state, written only by the control applier (pipelines/exports/export-commands.ts): one
-- row per version of an export job; read with FINAL. One job per (org, source, job type): enabling
-- again keeps its id. Ids are max(id) + 1 over every row ever written.
--   source_type  audiences | profiles | logs
--   source_id    the audience id, the profile db id, or the app id (logs)
--   job_type     idfa | gaid | email | customer_id (audiences), profile | profile_changes, logs
--   app_id       the audience's app, the app of an app-level profile db, the app of a log
--                export; '' for an org-level profile db
--   enabled      0 once disabled in the dashboard (admin API); enabled_at: the last enabling
CREATE TABLE IF NOT EXISTS export_jobs
(
    id UInt64,
    org_id UInt64,
    source_type LowCardinality(String),
    source_id String,
    job_type LowCardinality(String),
    name String,
    app_id String,
    enabled UInt8,
    enabled_at DateTime64(3, 'UTC'),
    disabled_at Nullable(DateTime64(3, 'UTC')),
    created_at DateTime64(3, 'UTC'),
    version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY id;

-- The export plan of an org (control state, as above): 'standard' (the default: 5 audience and
-- 5 profile exports) or 'remarketing' (20 audience exports). Caps are configuration.
CREATE TABLE IF NOT EXISTS export_plans
(
    org_id UInt64,
    plan LowCardinality(String),
    version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY org_id;

-- One row per generated file, written by the export writer after the file is in place (a file
-- is never listed before it is whole). FINAL keeps the latest generation of each key.
--   file_key      what the file is: 'hour:2026-11-23T13' (logs), 'full' (audiences, profile),
--                 'changes' (profile_changes)
--   path          under the files root (exports/...); each generation has a path of its own
--   rows, bytes   lines in the file, gzip bytes
--   as_of         the engine's clock when the data was read: data inserted after it is newer
--                 than the file (what makes a file stale)
--   range_from    profile_changes: the file holds the changes inserted after this (the cursor
--                 when it was written) up to as_of
CREATE TABLE IF NOT EXISTS export_files
(
    export_id UInt64,
    org_id UInt64,
    file_key String,
    path String,
    rows UInt64,
    bytes UInt64,
    as_of DateTime64(3, 'UTC'),
    range_from DateTime64(3, 'UTC'),
    generated_at DateTime64(3, 'UTC'),
    expire_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(generated_at)
ORDER BY (export_id, file_key)
TTL toDateTime(expire_at) + INTERVAL 1 DAY;

-- When each export was last requested through the API (the 45-day idle rule, last_requested_at).
-- Written by the edge; the latest wins.
CREATE TABLE IF NOT EXISTS export_requests
(
    export_id UInt64,
    requested_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(requested_at)
ORDER BY export_id;

-- The profile_changes cursor of each export: the as_of of the last file a client fetched whole.
-- Written by the edge when it has sent the whole file; it only moves forward.
CREATE TABLE IF NOT EXISTS export_cursors
(
    export_id UInt64,
    cursor DateTime64(3, 'UTC'),
    moved_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(cursor)
ORDER BY export_id;

-- Insert times stamped by the engine (one clock, whatever process wrote the row): a file records
-- the engine time it read at (as_of), and a row inserted later makes it stale, however late the
-- row arrived (an offline device's old at_millis, a backlog replayed after an outage). Existing
-- rows are materialized once with the migration's time. The minmax indexes let "anything newer
-- than as_of?" skip every old granule.
ALTER TABLE raw_log ADD COLUMN IF NOT EXISTS inserted_at DateTime64(3, 'UTC') DEFAULT now64(3);
ALTER TABLE raw_log MATERIALIZE COLUMN inserted_at SETTINGS mutations_sync = 2;
ALTER TABLE raw_log ADD INDEX IF NOT EXISTS idx_inserted_at inserted_at TYPE minmax GRANULARITY 1;
ALTER TABLE raw_log MATERIALIZE INDEX idx_inserted_at SETTINGS mutations_sync = 2;

ALTER TABLE profile_changes ADD COLUMN IF NOT EXISTS inserted_at DateTime64(3, 'UTC') DEFAULT now64(3);
ALTER TABLE profile_changes MATERIALIZE COLUMN inserted_at SETTINGS mutations_sync = 2;
ALTER TABLE profile_changes ADD INDEX IF NOT EXISTS idx_inserted_at inserted_at TYPE minmax GRANULARITY 1;
ALTER TABLE profile_changes MATERIALIZE INDEX idx_inserted_at SETTINGS mutations_sync = 2;

ALTER TABLE profiles ADD COLUMN IF NOT EXISTS inserted_at DateTime64(3, 'UTC') DEFAULT now64(3);
ALTER TABLE profiles MATERIALIZE COLUMN inserted_at SETTINGS mutations_sync = 2;
ALTER TABLE profiles ADD INDEX IF NOT EXISTS idx_inserted_at inserted_at TYPE minmax GRANULARITY 1;
ALTER TABLE profiles MATERIALIZE INDEX idx_inserted_at SETTINGS mutations_sync = 2;

ALTER TABLE customer_devices ADD COLUMN IF NOT EXISTS inserted_at DateTime64(3, 'UTC') DEFAULT now64(3);
ALTER TABLE customer_devices MATERIALIZE COLUMN inserted_at SETTINGS mutations_sync = 2;
ALTER TABLE customer_devices ADD INDEX IF NOT EXISTS idx_inserted_at inserted_at TYPE minmax GRANULARITY 1;
ALTER TABLE customer_devices MATERIALIZE INDEX idx_inserted_at SETTINGS mutations_sync = 2;

-- The advertising identifier of each install (IDFA on iOS, GAID on Android), as the SDK last
-- reported it, and whether the user limited ad tracking: what the idfa and gaid audience exports
-- write. '' / 0 for devices last seen before this migration.
ALTER TABLE devices ADD COLUMN IF NOT EXISTS advertising_id String DEFAULT '';
ALTER TABLE devices ADD COLUMN IF NOT EXISTS limit_advertising UInt8 DEFAULT 0;
ALTER TABLE devices ADD COLUMN IF NOT EXISTS inserted_at DateTime64(3, 'UTC') DEFAULT now64(3);
ALTER TABLE devices MATERIALIZE COLUMN inserted_at SETTINGS mutations_sync = 2;
ALTER TABLE devices ADD INDEX IF NOT EXISTS idx_inserted_at inserted_at TYPE minmax GRANULARITY 1;
ALTER TABLE devices MATERIALIZE INDEX idx_inserted_at SETTINGS mutations_sync = 2
