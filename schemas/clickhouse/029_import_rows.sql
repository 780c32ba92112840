-- Profile import rows staged for the profile writer (docs/imports.md): the import processor
-- types each row (the PATCH rules, rejections with their reasons) and writes the rows of a round
-- here in one insert; the bus carries only a small block record naming them, and the writer
-- applies a round's blocks with INSERT … SELECT against the profiles' state read in the engine.
-- Rows that only assign and delete are staged; a row of the changes syntax travels in its block.
--   updates       JSON object: the attributes the row assigns, as the profile JSON holds them
--   update_types  attribute -> string | integer | date | set
--   deletes       attributes the row deletes
--   email         lower($email) when the row assigns it ('' otherwise)
-- A round staged again after a crash of the processor writes the same rows (natural key). Kept
-- two days: long enough for any redelivery of their blocks.
CREATE TABLE IF NOT EXISTS import_rows
(
    import_id String,
    round UInt64,
    block UInt32,
    line UInt64,
    customer_id String,
    updates String,
    update_types Map(String, LowCardinality(String)),
    deletes Array(String),
    email String,
    staged_at DateTime DEFAULT now()
)
ENGINE = ReplacingMergeTree
ORDER BY (import_id, round, block, line)
TTL staged_at + INTERVAL 2 DAY;
