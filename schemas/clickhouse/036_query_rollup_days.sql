-- UTC days of the Query API's rollup (docs/query-api.md, "Rollups and estimates"): `by_day`, an
-- aggregate projection of `query_rollup` per app, UTC day and kind, its users and sessions merged
-- into one uniq state per day and its sums added up. It is kept inside each part of the rollup (no
-- extra part, no extra view on the events insert); the engine reads it instead of the hourly rows
-- when a query groups and filters by what it keeps, which the compiler writes so for apps in UTC
-- (rollup-fit.ts): users by day over a month then merges 60 states, not 7,000 hourly ones per app.
-- Its granules are 128 rows: at the table's 8,192, a read of one app's days decoded every app's
-- states in the granule, which cost more than the hourly rows. A projection's own granularity
-- needs ClickHouse 26.1; an older server leaves the projection out (the `engine >=` lines) and
-- answers the same from the hourly rows.
-- Merges of an AggregatingMergeTree combine rows; `rebuild` computes a merged part's projection
-- again from its rows, which is exact whatever the projection (the engine refuses a projection on
-- this engine without a mode).
ALTER TABLE query_rollup MODIFY SETTING deduplicate_merge_projection_mode = 'rebuild';
-- engine >= 26.1
ALTER TABLE query_rollup ADD PROJECTION IF NOT EXISTS by_day
(
    SELECT app_id, toDate(hour), kind, sum(occurrences), sum(ltv), uniqMerge(users), uniqMerge(sessions)
    GROUP BY app_id, toDate(hour), kind
) WITH SETTINGS (index_granularity = 128);
-- The parts stored before this migration get it too, before Sluice starts serving (a mutation over
-- the rollup's rows, far fewer than the events: seconds for 20M events' worth).
-- engine >= 26.1
ALTER TABLE query_rollup MATERIALIZE PROJECTION by_day SETTINGS mutations_sync = 1;
