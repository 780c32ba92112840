-- Merges of profiles and profile_changes run column by column (the vertical algorithm): the key
-- columns of the parts are merged first, then each other column is gathered on its own, so a merge
-- holds the buffers of one column of its parts at a time instead of all of them. A profile import
-- writes both tables a round (20,000 rows) at a time, and their merges of 4 such parts (migration
-- 037) run all through it, often together: they are the engine's memory peak of an import
-- (docs/imports.md, "Speed").
-- Migration 034 asked for vertical merges, but the engine merges vertically only into a wide part,
-- and every part of these tables was compact (under 64 MB), so every merge ran whole. A part of
-- 32,768 rows or more is now wide: a round's insert (20,000 rows) and a live PATCH's stay compact
-- (one write buffer, not one per column), a merge of round parts is wide, so vertical. One merge of
-- 4 round parts held 12-72 MB (median ~36) merged whole, 3-39 MB (median ~15) column by column,
-- for the same CPU (50 rounds of 20,000 rows of 20 attributes, chdb, sampled from system.merges).
ALTER TABLE profiles MODIFY SETTING min_bytes_for_wide_part = 0, min_rows_for_wide_part = 32768;
ALTER TABLE profile_changes MODIFY SETTING min_bytes_for_wide_part = 0, min_rows_for_wide_part = 32768;
