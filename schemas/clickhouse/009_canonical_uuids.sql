-- Canonical ids (schemas/uuid.ts): event uuids are deduplicated and stored in one spelling (a
-- 128-bit UUID as lower case 8-4-4-4-12, any other id in lower case), and the SDK's install,
-- device and session uuids are canonical when they are 128-bit UUIDs. Rows written before keep
-- their ids; this migration makes them findable under the canonical spelling:
-- - the exactly-once index gets a canonical entry beside each other spelling, so a replay of an
--   old upload (now canonicalised) is still found as a duplicate;
-- - device state is copied under the canonical install uuid (same version: a newer canonical
--   row wins), and each customer's last device names it canonically (version + 1 replaces it),
--   so SDK uploads after the upgrade continue the same device instead of starting a second one.
-- The expressions are the rule of schemas/uuid.ts in SQL; test/integration/uuid-upgrade.test.ts
-- compares the two on every spelling. Re-running is harmless (ReplacingMergeTree, same keys).
INSERT INTO event_uuid_index (app_id, uuid, transaction_id, received_at)
SELECT app_id, canon_event, transaction_id, received_at
FROM (
    SELECT app_id, uuid, transaction_id, received_at,
        lower(replaceAll(uuid, '-', '')) AS hex_event,
        if(match(uuid, '^[0-9a-fA-F-]+$') AND length(hex_event) = 32,
           concat(substring(hex_event, 1, 8), '-', substring(hex_event, 9, 4), '-', substring(hex_event, 13, 4), '-',
                  substring(hex_event, 17, 4), '-', substring(hex_event, 21, 12)),
           lower(uuid)) AS canon_event
    FROM event_uuid_index
)
WHERE canon_event != uuid;

INSERT INTO devices (app_id, install_uuid, device_uuid, customer_id, last_active_at, app_version, os_version, platform,
    model, country, language, device_timezone, push_token, push_status, version)
SELECT app_id, canon_install, canon_device, customer_id, last_active_at, app_version, os_version, platform,
    model, country, language, device_timezone, push_token, push_status, version
FROM (
    SELECT *,
        lower(replaceAll(install_uuid, '-', '')) AS hex_install,
        if(match(install_uuid, '^[0-9a-fA-F-]+$') AND length(hex_install) = 32,
           concat(substring(hex_install, 1, 8), '-', substring(hex_install, 9, 4), '-', substring(hex_install, 13, 4), '-',
                  substring(hex_install, 17, 4), '-', substring(hex_install, 21, 12)),
           install_uuid) AS canon_install,
        lower(replaceAll(device_uuid, '-', '')) AS hex_device,
        if(match(device_uuid, '^[0-9a-fA-F-]+$') AND length(hex_device) = 32,
           concat(substring(hex_device, 1, 8), '-', substring(hex_device, 9, 4), '-', substring(hex_device, 13, 4), '-',
                  substring(hex_device, 17, 4), '-', substring(hex_device, 21, 12)),
           device_uuid) AS canon_device
    FROM devices FINAL
)
WHERE canon_install != install_uuid OR canon_device != device_uuid;

INSERT INTO customer_devices (app_id, customer_id, install_uuid, device_uuid, session_uuid, last_active_at, first_session_at,
    last_session_at, app_version, os_version, platform, model, country, language, device_timezone, push_token,
    push_status, user_type, version)
SELECT app_id, customer_id, canon_install, canon_device, canon_session, last_active_at, first_session_at,
    last_session_at, app_version, os_version, platform, model, country, language, device_timezone, push_token,
    push_status, user_type, version + 1
FROM (
    SELECT *,
        lower(replaceAll(install_uuid, '-', '')) AS hex_install,
        if(match(install_uuid, '^[0-9a-fA-F-]+$') AND length(hex_install) = 32,
           concat(substring(hex_install, 1, 8), '-', substring(hex_install, 9, 4), '-', substring(hex_install, 13, 4), '-',
                  substring(hex_install, 17, 4), '-', substring(hex_install, 21, 12)),
           install_uuid) AS canon_install,
        lower(replaceAll(device_uuid, '-', '')) AS hex_device,
        if(match(device_uuid, '^[0-9a-fA-F-]+$') AND length(hex_device) = 32,
           concat(substring(hex_device, 1, 8), '-', substring(hex_device, 9, 4), '-', substring(hex_device, 13, 4), '-',
                  substring(hex_device, 17, 4), '-', substring(hex_device, 21, 12)),
           device_uuid) AS canon_device,
        lower(replaceAll(session_uuid, '-', '')) AS hex_session,
        if(match(session_uuid, '^[0-9a-fA-F-]+$') AND length(hex_session) = 32,
           concat(substring(hex_session, 1, 8), '-', substring(hex_session, 9, 4), '-', substring(hex_session, 13, 4), '-',
                  substring(hex_session, 17, 4), '-', substring(hex_session, 21, 12)),
           session_uuid) AS canon_session
    FROM customer_devices FINAL
)
WHERE canon_install != install_uuid OR canon_device != device_uuid OR canon_session != session_uuid;
