-- Audiences (docs/audiences.md): named target rules of an app, and their segmentation counts.

-- Control state, written only by the control applier (pipelines/audiences/audience-commands.ts):
-- one row per version of an audience; read with FINAL. Ids are max(id) + 1 over every row,
-- deleted ones included, so an id is never reused.
--   target_rules        canonical JSON (schemas/audiences.ts parseTargetRules): what the API
--                       answers and the compiler reads
--   target_rules_given  the request's target_rules object as sent (JSON), for reference
--   deleted_at          set by DELETE (soft delete): the row stays, hidden from the API
CREATE TABLE IF NOT EXISTS audiences
(
    id UInt64,
    org_id UInt64,
    app_id String,
    name String,
    target_rules String,
    target_rules_given String,
    created_at DateTime64(3, 'UTC'),
    updated_at DateTime64(3, 'UTC'),
    deleted_at Nullable(DateTime64(3, 'UTC')),
    version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY id;

-- Segmentation counts: derived data, written by the audience counter (a worker pipeline), never
-- through the control plane. One row per computation; FINAL keeps the latest (version =
-- calculated_at in ms).
--   requested_at      the latest request this computation answers (an edge waits for it)
--   audience_version  the audiences.version the rules were read at
--   duration_ms       how long the count query took
CREATE TABLE IF NOT EXISTS audience_counts
(
    audience_id UInt64,
    org_id UInt64,
    app_id String,
    user_count UInt64,
    has_push UInt64,
    seen_last_thirty UInt64,
    calculated_at DateTime64(3, 'UTC'),
    requested_at DateTime64(3, 'UTC'),
    audience_version UInt64,
    duration_ms UInt32,
    version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY audience_id;
