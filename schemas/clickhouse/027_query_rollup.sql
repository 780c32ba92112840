-- The Query API's rollup (docs/query-api.md, "Rollups"): events and session starts pre-aggregated
-- per app, UTC hour, kind ('e' event, 's' session start), event name and the common device
-- dimensions, filled by views in the same INSERT as `events` and `sessions` (both modes: the
-- writer's `events_ingest` view feeds `events`, whose view feeds this). The query compiler answers
-- from it when a query's metrics, dimensions and conditions all fit, from the raw tables otherwise.
--   hour         UTC hour of the event (session start): hours, not days, so that day, week and
--                month boundaries of any app time zone whose offset is a whole number of hours
--                are sums of whole rows
--   occurrences  events (0 on session rows): exact
--   ltv          sum of ltv_change: exact
--   users        uniq state of the user (install, else 'customer:' + customer id): an estimate
--   sessions     uniq state of the session uuid: an estimate (session starts replayed into
--                `sessions` before FINAL collapses them count once, as distinct values do)
-- query_rollup_names below keeps the same without the device dimensions.
-- Rows are small sums and sketches: a view's GROUP BY over an insert block of 50,000 events
-- keeps a few hundred to a few thousand rows, and the table merges them further.
CREATE TABLE IF NOT EXISTS query_rollup
(
    app_id LowCardinality(String),
    hour DateTime('UTC'),
    kind LowCardinality(String),
    event_name LowCardinality(String),
    country LowCardinality(String),
    language LowCardinality(String),
    app_version LowCardinality(String),
    platform LowCardinality(String),
    source LowCardinality(String),
    occurrences SimpleAggregateFunction(sum, UInt64),
    ltv SimpleAggregateFunction(sum, Int64),
    users AggregateFunction(uniq, String),
    sessions AggregateFunction(uniq, String)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(hour)
ORDER BY (app_id, hour, kind, event_name, country, language, app_version, platform, source);

CREATE MATERIALIZED VIEW IF NOT EXISTS query_rollup_events_mv TO query_rollup AS
SELECT app_id, toStartOfHour(event_time) AS hour, 'e' AS kind, event_name, country, language, app_version,
       platform, source, count() AS occurrences, sum(ltv_change) AS ltv,
       uniqStateIf(if(install_uuid != '', install_uuid, concat('customer:', customer_id)),
                   install_uuid != '' OR customer_id != '') AS users,
       uniqStateIf(session_uuid, session_uuid != '') AS sessions
FROM events
GROUP BY app_id, hour, event_name, country, language, app_version, platform, source;

CREATE MATERIALIZED VIEW IF NOT EXISTS query_rollup_sessions_mv TO query_rollup AS
SELECT app_id, toStartOfHour(started_at) AS hour, 's' AS kind, '' AS event_name, country, '' AS language,
       app_ver AS app_version, platform, 'sdk' AS source, toUInt64(0) AS occurrences, toInt64(0) AS ltv,
       uniqStateIf(if(install_uuid != '', install_uuid, concat('customer:', customer_id)),
                   install_uuid != '' OR customer_id != '') AS users,
       uniqStateIf(session_uuid, session_uuid != '') AS sessions
FROM sessions
GROUP BY app_id, hour, country, app_version, platform;

-- The same per app, hour, kind and event name only, for queries by time and event name (the most
-- usual): an hour of an app is a few dozen rows here, where the wide rollup has one per device
-- combination seen. Filled from the wide rollup's inserts (its blocks are already aggregated), so
-- the backfill below fills it too.
CREATE TABLE IF NOT EXISTS query_rollup_names
(
    app_id LowCardinality(String),
    hour DateTime('UTC'),
    kind LowCardinality(String),
    event_name LowCardinality(String),
    occurrences SimpleAggregateFunction(sum, UInt64),
    ltv SimpleAggregateFunction(sum, Int64),
    users AggregateFunction(uniq, String),
    sessions AggregateFunction(uniq, String)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(hour)
ORDER BY (app_id, hour, kind, event_name);

CREATE MATERIALIZED VIEW IF NOT EXISTS query_rollup_names_mv TO query_rollup_names AS
SELECT app_id, hour, kind, event_name, sum(occurrences) AS occurrences, sum(ltv) AS ltv,
       uniqMergeState(users) AS users, uniqMergeState(sessions) AS sessions
FROM query_rollup
GROUP BY app_id, hour, kind, event_name;

-- Backfill: the events and sessions stored before this migration, so that a rollup answer covers
-- all stored data. Sluice migrates before its writers start, so no row is counted twice (a row
-- inserted between the views' creation and these reads would be).
INSERT INTO query_rollup
SELECT app_id, toStartOfHour(event_time) AS hour, 'e' AS kind, event_name, country, language, app_version,
       platform, source, count() AS occurrences, sum(ltv_change) AS ltv,
       uniqStateIf(if(install_uuid != '', install_uuid, concat('customer:', customer_id)),
                   install_uuid != '' OR customer_id != '') AS users,
       uniqStateIf(session_uuid, session_uuid != '') AS sessions
FROM events
GROUP BY app_id, hour, event_name, country, language, app_version, platform, source;

INSERT INTO query_rollup
SELECT app_id, toStartOfHour(started_at) AS hour, 's' AS kind, '' AS event_name, country, '' AS language,
       app_ver AS app_version, platform, 'sdk' AS source, toUInt64(0) AS occurrences, toInt64(0) AS ltv,
       uniqStateIf(if(install_uuid != '', install_uuid, concat('customer:', customer_id)),
                   install_uuid != '' OR customer_id != '') AS users,
       uniqStateIf(session_uuid, session_uuid != '') AS sessions
FROM sessions FINAL
GROUP BY app_id, hour, country, app_version, platform;
