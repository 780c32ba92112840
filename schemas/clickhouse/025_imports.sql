-- Imports (docs/imports.md): profile and audience imports, their receipts and rejected rows.

-- One row per state of an import; FINAL keeps the latest. The edge writes the first row
-- (state 'queued', version 0) once the body is durable; the import processor writes the others
-- (version = ms of the write, so an edge's row for a repeated import never hides the worker's).
--   kind            'profiles' | 'audience'
--   path            the body in the files port (imports/<import_id>)
--   state           queued | processing | read (every row read and handed on) | done | failed
--   rounds          profile imports: the rounds of blocks handed to the profile writer (checkpoint)
--   checkpoint_line the last line of the last round handed on: where a resumed import starts
--   blocks          blocks handed to the profile writer; the import is done when all are applied
--   audience_id     audience imports: the audience the members went to
--   list_id         audience imports: the member list written (audience_list_members)
--   members_known / members_unknown: audience imports, distinct members the app knows / does not
CREATE TABLE IF NOT EXISTS imports
(
    import_id String,
    org_id UInt64,
    kind LowCardinality(String),
    app_id String,
    profiledb_id UInt64,
    format LowCardinality(String),
    compression LowCardinality(String),
    path String,
    body_bytes UInt64,
    options String,
    state LowCardinality(String),
    received_at DateTime64(3, 'UTC'),
    updated_at DateTime64(3, 'UTC'),
    rows_read UInt64,
    rows_rejected UInt64,
    rounds UInt64,
    checkpoint_line UInt64,
    blocks UInt64,
    audience_id UInt64,
    list_id String,
    members_known UInt64,
    members_unknown UInt64,
    error String,
    version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY import_id;

-- A block of a profile import applied by the profile writer (its natural key: a block handed on
-- twice, after a crash of the processor, is applied once); `block` numbers a round's blocks.
-- rows = rows in the block; applied = rows that changed their profile; ignored = rows that
-- changed nothing.
CREATE TABLE IF NOT EXISTS import_blocks
(
    import_id String,
    round UInt64,
    block UInt32,
    rows UInt64,
    applied UInt64,
    ignored UInt64,
    applied_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree
ORDER BY (import_id, round, block);

-- The first 1,000 rejected rows of each import (by line), with the reason; the count is whole.
--   identifier  the row's customer_id (profile imports) or member (audience imports), as sent
CREATE TABLE IF NOT EXISTS import_rejected_rows
(
    import_id String,
    line UInt64,
    identifier String,
    reason String
)
ENGINE = ReplacingMergeTree
ORDER BY (import_id, line);
