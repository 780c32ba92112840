-- The events writer tags each insert with a deduplication token derived from its source offsets;
-- a plain MergeTree only honours tokens with a deduplication window, so give it one: a retried
-- insert of the same block is then dropped by the engine as well as by the writer's look-up.
ALTER TABLE events MODIFY SETTING non_replicated_deduplication_window = 1000;
