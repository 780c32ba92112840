-- Merges of the tables a profile import writes a round at a time take at most 4 parts at once
-- (the default allows 100; the merge selector took 8 of these at a time). The three tables grow
-- in step, so their merges run together: merging 8 parts each they held up to 186-235 MB of the
-- engine's memory at once (profiles 79-89 MB, profile_changes 66-84 MB, import_rows 47 MB:
-- 30 rounds of 20,000 bench rows, chdb, sampled from system.merges), the most of an import's
-- RSS growth; 4 parts at a time, up to 90-111 MB, for no more CPU over the import (docs/imports.md,
-- "Speed"). Parts then merge in more, smaller steps; a table's part count stays far under the
-- limits that delay inserts.
ALTER TABLE import_rows MODIFY SETTING max_parts_to_merge_at_once = 4;
ALTER TABLE profiles MODIFY SETTING max_parts_to_merge_at_once = 4;
ALTER TABLE profile_changes MODIFY SETTING max_parts_to_merge_at_once = 4;
