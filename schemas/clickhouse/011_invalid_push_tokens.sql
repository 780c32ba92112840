-- Push tokens a transport reported dead (APNs 410 Unregistered / 400 BadDeviceToken, FCM
-- UNREGISTERED): never sent to again, whatever a later SDK upload says about the install.
-- Keyed by the token itself, because a token belongs to one app install and an SDK may keep
-- re-uploading the same dead token. "An enabled push token" (audience has_push, push fan-out) is
-- devices.push_token != '' whose push_status is not a disabled one and that is not listed here.
CREATE TABLE IF NOT EXISTS invalid_push_tokens
(
    app_id LowCardinality(String),
    push_token String,
    install_uuid String,
    transport LowCardinality(String),
    reason String,
    invalidated_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(invalidated_at)
ORDER BY (app_id, push_token);
