-- Retention per table (docs/scaling.md, "Retention per table"): the TTL in days the migration
-- step last set on each table that grows with traffic, from the SLUICE_RETENTION_* settings
-- (schemas/clickhouse/retention.ts lists the tables). At every start the step compares the
-- settings with these rows and runs `ALTER TABLE … MODIFY TTL` (or `REMOVE TTL`) only for a table
-- whose setting changed: a TTL change makes the engine rewrite the parts holding expired rows, so
-- it must not run at every start of every process.
--   table_name  the table as the migrations name it (on a cluster: its Distributed name; the
--               statements change the shards' local tables)
--   days        the TTL in days; 0: none (rows are kept until deleted)
--   applied_at  when the statement ran (the latest row of a table is the one in force)
-- A table without a row has the TTL its migration gave it (none, or upload_receipts' and
-- rejected_lines' 30 days).
CREATE TABLE IF NOT EXISTS table_retention
(
    table_name String,
    days UInt32,
    applied_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(applied_at)
ORDER BY table_name;
