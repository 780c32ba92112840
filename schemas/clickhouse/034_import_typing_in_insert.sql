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
