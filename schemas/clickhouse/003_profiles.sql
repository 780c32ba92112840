-- Profile store: the current profiles (one row per version) and the change log.
-- Written only by the profile writer (pipelines/profiles/profile-writer.ts); read with FINAL.

-- One row per profile version; FINAL gives the current profile of each (profile db, customer).
-- Current profiles for analysts: SELECT ... FROM profiles FINAL WHERE deleted = 0
--   attributes       JSON object as the API returns it: integers as numbers, dates 'YYYY-MM-DD', sets arrays
--   attribute_types  attribute -> string | integer | date | set (tells dates from strings)
--   email            lower($email), '' when unset: what the e-mail lookup matches
--   deleted          1 for a deleted profile (the row is kept: it orders later writes and replays)
--   source_partition, source_offset: the last bus record applied; a replayed record at or below it is skipped
CREATE TABLE IF NOT EXISTS profiles
(
    profiledb_id UInt64,
    org_id UInt64,
    app_id String,
    customer_id String,
    attributes String,
    attribute_types Map(String, LowCardinality(String)),
    email String,
    deleted UInt8,
    updated_at DateTime64(3, 'UTC'),
    source_partition UInt32,
    source_offset UInt64,
    version UInt64,
    INDEX idx_email email TYPE bloom_filter GRANULARITY 4
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (profiledb_id, customer_id);

-- Every applied request that changed a profile (or was partly refused when applied): what the
-- profile_changes export reads. change_id is the request's bus position (topic:partition:offset),
-- so a replay after a crash rewrites the same row instead of adding one.
--   at          when the edge accepted the request;  applied_at: when the writer applied it
--   seq         the record's offset: the order of one customer's changes
--   updates     JSON object attribute -> new value;  deletes: attributes removed
--   profile_deleted  1 when the request deleted the whole profile
--   ignored     JSON array of changes refused when applied ({index, attr, op, reason})
CREATE TABLE IF NOT EXISTS profile_changes
(
    profiledb_id UInt64,
    org_id UInt64,
    app_id String,
    customer_id String,
    change_id String,
    at DateTime64(3, 'UTC'),
    applied_at DateTime64(3, 'UTC'),
    seq UInt64,
    updates String,
    deletes Array(String),
    profile_deleted UInt8,
    ignored String
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(at)
ORDER BY (profiledb_id, at, change_id);
