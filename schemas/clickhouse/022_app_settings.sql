-- What the Apps and Query APIs need of an app beyond orgs/apps: its time zone (the Query API's day
-- boundaries), icon and custom dimension labels (docs/query-api.md). Control state, written only
-- by the control applier (`set-app-settings`); an app without a row has UTC, no icon, no labels.
CREATE TABLE IF NOT EXISTS app_settings
(
    app_id String,
    org_id UInt64,
    time_zone String DEFAULT 'UTC',
    icon_url String DEFAULT '',
    -- JSON object: custom_0_dimension … custom_19_dimension → label.
    custom_dimensions String DEFAULT '{}',
    updated_at DateTime64(3, 'UTC'),
    version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY app_id;
