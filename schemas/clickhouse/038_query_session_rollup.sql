-- The Query API's session rollup (docs/query-api.md, "Sessions and their lengths"): what
-- `sessions` and `average_session_length` by time need, kept as rows arrive, so that those
-- queries read neither `events` nor the SDK's raw log. Filled by views in the same INSERT as the
-- rows they count (both modes), and backfilled below from what is stored.
--
-- query_session_hours: one row per app, UTC hour and session that had a start or an event in
-- that hour: the raw path's "distinct sessions of the rows", with the hour the time dimensions
-- are cut from. Rows without a session keep one row with an empty uuid per app and hour, so an hour
-- with only such events still answers a row (0 sessions, no length), as the raw path does (a local day, week or month of a whole-hour zone is a set of whole UTC hours, as in
-- query_rollup). Copies collapse as parts merge; readers count distinct sessions, so a copy not
-- yet merged counts once and `sessions` read from here is exact.
CREATE TABLE IF NOT EXISTS query_session_hours
(
    app_id LowCardinality(String),
    hour DateTime('UTC'),
    session_uuid String
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(hour)
ORDER BY (app_id, hour, session_uuid);

-- Per insert block, one row per session and hour of the block (a live block spans a minute or two:
-- about one row per session in it), not one per event.
CREATE MATERIALIZED VIEW IF NOT EXISTS query_session_hours_events_mv TO query_session_hours AS
SELECT DISTINCT app_id, toStartOfHour(event_time) AS hour, session_uuid
FROM events;

CREATE MATERIALIZED VIEW IF NOT EXISTS query_session_hours_sessions_mv TO query_session_hours AS
SELECT DISTINCT app_id, toStartOfHour(started_at) AS hour, session_uuid
FROM sessions;

-- query_session_lengths: each session's start (its earliest `s` row) and last row (of any type) in
-- the SDK's raw log, which is what the raw path computes a length from. min and max do not change
-- with a replayed row. A session whose start is not in the log has a NULL start and no length. A
-- row goes when its start would leave the raw log (30 days: raw_log's TTL), or 30 days after its
-- last row when it has no start (that start, earlier, is gone from the log by then too).
CREATE TABLE IF NOT EXISTS query_session_lengths
(
    app_id LowCardinality(String),
    session_uuid String,
    started_at SimpleAggregateFunction(min, Nullable(DateTime64(3, 'UTC'))),
    last_at SimpleAggregateFunction(max, DateTime64(3, 'UTC'))
)
ENGINE = AggregatingMergeTree
ORDER BY (app_id, session_uuid)
TTL toDateTime(ifNull(started_at, last_at)) + INTERVAL 30 DAY;

CREATE MATERIALIZED VIEW IF NOT EXISTS query_session_lengths_mv TO query_session_lengths AS
SELECT app_id, session_uuid, minIf(toNullable(at), type = 's') AS started_at, max(at) AS last_at
FROM raw_log WHERE session_uuid != ''
GROUP BY app_id, session_uuid;

-- Backfill: the rows stored before this migration. Sluice migrates before its writers start, so
-- nothing is counted twice (and the session hours would count a row inserted in between once).
INSERT INTO query_session_hours
SELECT DISTINCT app_id, toStartOfHour(event_time) AS hour, session_uuid
FROM events;

INSERT INTO query_session_hours
SELECT DISTINCT app_id, toStartOfHour(started_at) AS hour, session_uuid
FROM sessions;

INSERT INTO query_session_lengths
SELECT app_id, session_uuid, minIf(toNullable(at), type = 's') AS started_at, max(at) AS last_at
FROM raw_log WHERE session_uuid != ''
GROUP BY app_id, session_uuid;
