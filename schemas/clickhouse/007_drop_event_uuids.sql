-- The old exactly-once index, replaced by event_uuid_index (migration 006).
DROP VIEW IF EXISTS event_uuids_mv;

DROP TABLE IF EXISTS event_uuids;
