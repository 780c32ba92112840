-- Inserts into `events` written as compact parts (all columns in one file) up to 64 MB of
-- uncompressed data, instead of wide parts (a file, and its write buffers, per column) from 10 MB
-- on. An insert of 50,000 events (EVENTS_PER_WRITE) was just over 10 MB, so wide: the engine held
-- ~101 MB for it, almost all of it the per-column write buffers (Map and LowCardinality columns
-- are several streams each); as a compact part it needs ~27 MB (measured standalone: the least
-- max_memory_usage the insert passes with, Sluice's schema and dedupe-index view). In embedded
-- mode those bursts were the RSS peaks of sustained ingestion. Merged parts past 64 MB are wide,
-- as before, so analysts' queries on settled data read per-column files as they did.
ALTER TABLE events MODIFY SETTING min_bytes_for_wide_part = 67108864;
