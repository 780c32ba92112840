-- Two more rollups of the Query API (docs/query-api.md, "Rollups and estimates"), for the queries
-- `query_rollup` (027) cannot answer: sessions with their length by time, and one event attribute's
-- values. Filled by views in the same INSERT as the rows they count (`events`, `sessions` and
-- `raw_log`; in both modes), and backfilled below from what is already stored.
--
-- query_session_rollup: one row per app, UTC hour and session that has a start or an event in that
-- hour (duplicates collapse as parts merge; readers count distinct sessions, so an unmerged copy
-- counts once). The `sessions` metric read from it is exact. Rows without a session (server-side
-- events) are kept as one row of the hour with an empty uuid: the hour has rows, so a query answers
-- it with 0 sessions, as the raw path does.
CREATE TABLE IF NOT EXISTS query_session_rollup
(
    app_id LowCardinality(String),
    hour DateTime('UTC'),
    session_uuid String
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(hour)
ORDER BY (app_id, hour, session_uuid);

CREATE MATERIALIZED VIEW IF NOT EXISTS query_session_rollup_events_mv TO query_session_rollup AS
SELECT DISTINCT app_id, toStartOfHour(event_time) AS hour, session_uuid
FROM events;

CREATE MATERIALIZED VIEW IF NOT EXISTS query_session_rollup_sessions_mv TO query_session_rollup AS
SELECT DISTINCT app_id, toStartOfHour(started_at) AS hour, session_uuid
FROM sessions;

-- query_session_lengths: each session's start and last row in the SDK's raw log, which the raw
-- path reads for average_session_length (its start's `s` row and its latest row of any type).
-- min and max are the same however often a row is replayed; a session whose start is not (yet)
-- in the log has a NULL start and no length. Kept as long as the raw log keeps rows (30 days from
-- the session's last row).
CREATE TABLE IF NOT EXISTS query_session_lengths
(
    app_id LowCardinality(String),
    session_uuid String,
    started_at SimpleAggregateFunction(min, Nullable(DateTime64(3, 'UTC'))),
    last_at SimpleAggregateFunction(max, DateTime64(3, 'UTC'))
)
ENGINE = AggregatingMergeTree
ORDER BY (app_id, session_uuid)
TTL toDateTime(last_at) + INTERVAL 30 DAY;

CREATE MATERIALIZED VIEW IF NOT EXISTS query_session_lengths_mv TO query_session_lengths AS
SELECT app_id, session_uuid, min(if(type = 's', at, NULL)) AS started_at, max(at) AS last_at
FROM raw_log WHERE session_uuid != ''
GROUP BY app_id, session_uuid;

-- query_attribute_rollup: events per app, attribute name, UTC day, event name and attribute value
-- (an event counts once under each attribute it carries), with occurrences and ltv (sums: exact)
-- and users (a uniq state: an estimate, as in query_rollup). Days, not hours: one attribute with
-- hundreds of values would make an hourly row per event; so it serves apps whose zone is UTC. The
-- attribute name leads the key, so a query reads only its attribute's rows.
CREATE TABLE IF NOT EXISTS query_attribute_rollup
(
    app_id LowCardinality(String),
    attribute String,
    day Date,
    event_name LowCardinality(String),
    value String,
    occurrences SimpleAggregateFunction(sum, UInt64),
    ltv SimpleAggregateFunction(sum, Int64),
    users AggregateFunction(uniq, String)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (app_id, attribute, day, event_name, value);

CREATE MATERIALIZED VIEW IF NOT EXISTS query_attribute_rollup_mv TO query_attribute_rollup AS
SELECT app_id, attribute, toDate(event_time, 'UTC') AS day, event_name, value, count() AS occurrences,
       sum(ltv_change) AS ltv,
       uniqStateIf(if(install_uuid != '', install_uuid, concat('customer:', customer_id)),
                   install_uuid != '' OR customer_id != '') AS users
FROM events ARRAY JOIN mapKeys(attributes) AS attribute, mapValues(attributes) AS value
GROUP BY app_id, attribute, day, event_name, value;

-- Backfill: the rows stored before this migration. Sluice migrates before its writers start, so no
-- row is counted twice (a row inserted between the views' creation and these reads would be; the
-- session rollups would count it once anyway).
INSERT INTO query_session_rollup
SELECT DISTINCT app_id, toStartOfHour(event_time) AS hour, session_uuid
FROM events;

INSERT INTO query_session_rollup
SELECT DISTINCT app_id, toStartOfHour(started_at) AS hour, session_uuid
FROM sessions;

INSERT INTO query_session_lengths
SELECT app_id, session_uuid, min(if(type = 's', at, NULL)) AS started_at, max(at) AS last_at
FROM raw_log FINAL WHERE session_uuid != ''
GROUP BY app_id, session_uuid;

INSERT INTO query_attribute_rollup
SELECT app_id, attribute, toDate(event_time, 'UTC') AS day, event_name, value, count() AS occurrences,
       sum(ltv_change) AS ltv,
       uniqStateIf(if(install_uuid != '', install_uuid, concat('customer:', customer_id)),
                   install_uuid != '' OR customer_id != '') AS users
FROM events ARRAY JOIN mapKeys(attributes) AS attribute, mapValues(attributes) AS value
GROUP BY app_id, attribute, day, event_name, value;
