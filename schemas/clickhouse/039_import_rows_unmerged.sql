-- Staged import rows are not merged once a part holds a round: import_rows is read a round at a
-- time by its key, by its own import only, and its parts expire whole (ttl_only_drop_parts), so a
-- merge of rounds is work and memory for nothing. Merging them took the engine's memory at the same
-- time as the merges of profiles and profile_changes, which grow in step with it (docs/imports.md,
-- "Speed"). Parts over 1 MB on disk (a round of 20,000 rows of 20 attributes is ~5 MB) are left as
-- they are; smaller ones (small imports, a round's few rows of the changes syntax) still merge, up
-- to 1 MB. Expired parts are still dropped by their TTL: dropping a part is no merge of its rows.
-- A round is a part (two when it has rows of both kinds), so an import of 30M rows leaves up to
-- 1,500-3,000 parts for two days: inserts are delayed from 6,000 parts and refused from 10,000.
ALTER TABLE import_rows MODIFY SETTING max_bytes_to_merge_at_max_space_in_pool = 1048576, parts_to_delay_insert = 6000, parts_to_throw_insert = 10000;
