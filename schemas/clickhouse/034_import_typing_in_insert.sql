-- Profile import CSV lines are typed by the engine as it reads the processor's insert
-- (INSERT INTO import_rows … SELECT … over the insert's RowBinary rows: docs/imports.md,
-- pipelines/imports/staged-csv.ts), no longer staged in import_raw (migration 032) and read back:
-- each line was written, merged and read once more for nothing. Its rows were kept a day and read
-- only right after their insert, so nothing needs them.
DROP TABLE IF EXISTS import_raw;

-- The tables an import writes a round at a time, written as compact parts (all columns in one
-- file) up to 64 MB of uncompressed data, as `events` (migration 020), instead of wide parts (a
-- file, and its write buffers, per column) from 10 MB on. A round of 20,000 profiles of 20
-- attributes is 10-15 MB in each: the writer's insert into `profiles` held up to 87 MB of the
-- engine's memory, the processor's into `import_rows` 51 MB (bench imports scenario, the queries'
-- own memory_usage). Merged parts past 64 MB are wide, as before, for analysts' reads.
ALTER TABLE import_rows MODIFY SETTING min_bytes_for_wide_part = 67108864;
ALTER TABLE profiles MODIFY SETTING min_bytes_for_wide_part = 67108864;
ALTER TABLE profile_changes MODIFY SETTING min_bytes_for_wide_part = 67108864;

-- Their merges, which held most of the engine's memory in a 1M-row import (MemoryTracking
-- +415 MB while the queries held at most 63 MB): the three tables grow in step, a round a time,
-- so their merges come together, each of 8 parts read at once. Merged horizontally (every column
-- of every part open at once: profile_changes and import_rows have fewer than the 11 non-key
-- columns of the default threshold, and merges of fewer than 131,072 rows never qualify), three
-- such merges took the engine's tracked memory to 573 MB; vertically (the key columns first, then
-- one column at a time) to 323 MB (40 rounds of 20,000 bench rows, standalone, chdb).
ALTER TABLE import_rows MODIFY SETTING vertical_merge_algorithm_min_columns_to_activate = 1, vertical_merge_algorithm_min_rows_to_activate = 1;
ALTER TABLE profiles MODIFY SETTING vertical_merge_algorithm_min_columns_to_activate = 1, vertical_merge_algorithm_min_rows_to_activate = 1;
ALTER TABLE profile_changes MODIFY SETTING vertical_merge_algorithm_min_columns_to_activate = 1, vertical_merge_algorithm_min_rows_to_activate = 1;

-- import_rows is read a round at a time by its key, once or a few times, then expires: merging it
-- into large parts is work for nothing. Its merges stop at 32 MB on disk (~120,000 rows; a 30M-row
-- import leaves ~250 parts, under the 1,000 that delay inserts), which took the same run to
-- 215 MB; expired rows go a whole part at a time (rows of a part were staged minutes apart).
ALTER TABLE import_rows MODIFY SETTING max_bytes_to_merge_at_max_space_in_pool = 33554432, ttl_only_drop_parts = 1;
