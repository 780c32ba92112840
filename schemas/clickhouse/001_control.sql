-- Control plane: organisations, apps, API keys, profile databases.
-- Versioned state: ReplacingMergeTree(version), read with FINAL. Ids are allocated by the admin API.

CREATE TABLE IF NOT EXISTS orgs
(
    id UInt64,
    name String,
    profiledb_id UInt64,
    created_at DateTime64(3, 'UTC'),
    version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY id;

CREATE TABLE IF NOT EXISTS apps
(
    app_id String,
    org_id UInt64,
    name String,
    profiledb_id UInt64,
    created_at DateTime64(3, 'UTC'),
    deleted UInt8 DEFAULT 0,
    version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY app_id;

CREATE TABLE IF NOT EXISTS api_keys
(
    api_key String,
    org_id UInt64,
    secret_hash String,
    scopes Array(LowCardinality(String)),
    created_at DateTime64(3, 'UTC'),
    revoked UInt8 DEFAULT 0,
    revoked_at Nullable(DateTime64(3, 'UTC')),
    version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY api_key;

CREATE TABLE IF NOT EXISTS profile_dbs
(
    id UInt64,
    org_id UInt64,
    app_id String,
    created_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree
ORDER BY id;
