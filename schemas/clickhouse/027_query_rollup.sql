-- The Query API's rollup (docs/query-api.md, "Rollups and estimates"): events and session starts
-- pre-aggregated per app, UTC hour, kind ('e' event, 's' session start) and event name, filled by
-- views in the same INSERT as `events` and `sessions` (both modes: the writer's `events_ingest` view
-- feeds `events`, whose view feeds this). The query compiler answers from it when a query's
-- metrics, dimensions and conditions all fit, from the raw tables otherwise.
--   hour         UTC hour of the event (session start): hours, not days, so that day, week and
--                month boundaries of any app time zone whose offset is a whole number of hours
--                are sums of whole rows
--   occurrences  events (0 on session rows): exact
--   ltv          sum of ltv_change: exact
--   users        uniq state of the user (install, else 'customer:' + customer id): an estimate
--   sessions     uniq state of the session uuid: an estimate (a session start replayed into
--                `sessions` before FINAL collapses it counts once, as distinct values do)
-- No device dimension (country, platform, version…): an insert block of live events then groups
-- into a row per app and event name of the hour (a few hundred of 50,000 events), where with them
-- it was a row per device combination seen (thousands), and the view cost more engine time than
-- storing the events (docs/query-api.md gives the measurement).
CREATE TABLE IF NOT EXISTS query_rollup
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

CREATE MATERIALIZED VIEW IF NOT EXISTS query_rollup_events_mv TO query_rollup AS
SELECT app_id, toStartOfHour(event_time) AS hour, 'e' AS kind, event_name, count() AS occurrences,
       sum(ltv_change) AS ltv,
       uniqStateIf(if(install_uuid != '', install_uuid, concat('customer:', customer_id)),
                   install_uuid != '' OR customer_id != '') AS users,
       uniqStateIf(session_uuid, session_uuid != '') AS sessions
FROM events
GROUP BY app_id, hour, event_name;

CREATE MATERIALIZED VIEW IF NOT EXISTS query_rollup_sessions_mv TO query_rollup AS
SELECT app_id, toStartOfHour(started_at) AS hour, 's' AS kind, '' AS event_name, toUInt64(0) AS occurrences,
       toInt64(0) AS ltv,
       uniqStateIf(if(install_uuid != '', install_uuid, concat('customer:', customer_id)),
                   install_uuid != '' OR customer_id != '') AS users,
       uniqStateIf(session_uuid, session_uuid != '') AS sessions
FROM sessions
GROUP BY app_id, hour;

-- Backfill: the events and sessions stored before this migration, so that a rollup answer covers
-- all stored data. Sluice migrates before its writers start, so no row is counted twice (a row
-- inserted between the views' creation and these reads would be).
INSERT INTO query_rollup
SELECT app_id, toStartOfHour(event_time) AS hour, 'e' AS kind, event_name, count() AS occurrences,
       sum(ltv_change) AS ltv,
       uniqStateIf(if(install_uuid != '', install_uuid, concat('customer:', customer_id)),
                   install_uuid != '' OR customer_id != '') AS users,
       uniqStateIf(session_uuid, session_uuid != '') AS sessions
FROM events
GROUP BY app_id, hour, event_name;

INSERT INTO query_rollup
SELECT app_id, toStartOfHour(started_at) AS hour, 's' AS kind, '' AS event_name, toUInt64(0) AS occurrences,
       toInt64(0) AS ltv,
       uniqStateIf(if(install_uuid != '', install_uuid, concat('customer:', customer_id)),
                   install_uuid != '' OR customer_id != '') AS users,
       uniqStateIf(session_uuid, session_uuid != '') AS sessions
FROM sessions FINAL
GROUP BY app_id, hour;
