-- UTC days of the Query API's rollup (docs/query-api.md, "Rollups and estimates"): two aggregate
-- projections of `query_rollup`, kept inside each of its parts (no extra part, no extra view on
-- the events insert). The engine reads one instead of the hourly rows when a query groups and
-- filters only by what it keeps, which the compiler writes for apps in UTC (rollup-fit.ts).
--   by_day        per app, UTC day and kind, every user, session, occurrence and ltv of the day in
--                 one uniq state or sum: users by day over a month merges about 60 states instead
--                 of a state per hour and event name (the values merged, not the rows read, were
--                 the cost of the users shapes)
--   by_day_event  per app, UTC day, kind and event name, the sums only (no states: the occurrence
--                 shapes read no state, and a query with users per event name reads the hourly
--                 rows, whose states hold about as many values as a day's would)
-- Merges of an AggregatingMergeTree combine rows; `rebuild` makes them compute a merged part's
-- projections again from its rows, which is exact whatever the projection (the engine refuses a
-- projection on this engine without a mode).
ALTER TABLE query_rollup MODIFY SETTING deduplicate_merge_projection_mode = 'rebuild';
ALTER TABLE query_rollup ADD PROJECTION IF NOT EXISTS by_day
(
    SELECT app_id, toDate(hour), kind, sum(occurrences), sum(ltv), uniqMerge(users), uniqMerge(sessions)
    GROUP BY app_id, toDate(hour), kind
);
ALTER TABLE query_rollup ADD PROJECTION IF NOT EXISTS by_day_event
(
    SELECT app_id, toDate(hour), kind, event_name, sum(occurrences), sum(ltv)
    GROUP BY app_id, toDate(hour), kind, event_name
);
-- The parts stored before this migration get them too, before Sluice starts serving (a mutation
-- over the rollup's rows, far fewer than the events: seconds for 20M events' worth).
ALTER TABLE query_rollup MATERIALIZE PROJECTION by_day SETTINGS mutations_sync = 1;
ALTER TABLE query_rollup MATERIALIZE PROJECTION by_day_event SETTINGS mutations_sync = 1;
