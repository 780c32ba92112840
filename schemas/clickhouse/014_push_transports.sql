-- Push transport configuration (control plane, pipelines/control/push-transports.ts): which
-- transport delivers an app's pushes to a platform, set and removed by the set-push-transport and
-- remove-push-transport commands (admin API and `sluice admin push-transport`).
--   platform    ios | android (a command for `all` writes one row per platform)
--   kind        file | webhook | apns | fcm
--   settings    the kind's settings as JSON, defaults filled in. Secrets (webhook secret, APNs
--               .p8 key, FCM service account key) are stored as given: the transports need them
--               to sign and authenticate. Admin reads mask them; only the SQL port's admin can
--               read this table.
--   deleted     1 once removed; an app with no row left delivers through the default file transport
-- Versioned state: ReplacingMergeTree(version), read with FINAL.
CREATE TABLE IF NOT EXISTS push_transports
(
    app_id String,
    platform LowCardinality(String),
    org_id UInt64,
    kind LowCardinality(String),
    settings String,
    updated_at DateTime64(3, 'UTC'),
    deleted UInt8 DEFAULT 0,
    version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (app_id, platform);
