-- Profile import CSV lines as read (docs/imports.md): the import processor splits the body into
-- lines and stages a round of plain ones (no quote; UTF-8; as many cells as the header) here in
-- one RowBinary insert, and the engine types them into import_rows itself, by the PATCH rules,
-- with one INSERT … SELECT per round (pipelines/imports/staged-csv.ts). A line the engine cannot
-- type for certain (a cell over a limit, a date that names no day, a mixed set …) is left to the
-- processor's JavaScript, which gives the row its reason.
--   raw   the whole line, without its line break (the processor checked its customer_id cell
--         and placed the row in its block by it)
-- A round staged again after a crash of the processor writes the same rows (natural key). Kept a
-- day: the rows are read once, right after their insert.
CREATE TABLE IF NOT EXISTS import_raw
(
    import_id String,
    round UInt64,
    block UInt32,
    line UInt64,
    raw String,
    staged_at DateTime DEFAULT now()
)
ENGINE = ReplacingMergeTree
ORDER BY (import_id, round, block, line)
TTL staged_at + INTERVAL 1 DAY;
