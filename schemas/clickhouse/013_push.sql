-- Push (docs/push.md): the record of every accepted push request, one row per delivery, and the
-- campaign_key reports over both.

-- One row per version of a request's planning, written by its single owner (the planner of the
-- app's partition); read with FINAL. `generation` counts uses of one request id by one app: a
-- request id repeated within 24 hours of its latest use is the same request (nothing is sent
-- twice); repeated later it is a new one, generation + 1.
--   status      'planning' (targets being resolved; `cursor` = the last install emitted),
--               'planned' (every delivery batch is on the push-deliveries topic)
--   targeted    installs given a delivery so far (final once planned)
--   unmatched   targets (customers) that had no device with an enabled push token
--   error       why nothing was planned (e.g. the audience was deleted after the 202)
--   origin      'api' (POST /v2/push) or 'campaign' (a campaign occurrence)
--   targets     what the messages target, as JSON: [] for a broadcast, the customer ids, the
--               audience id, or the canonical profile criteria (cut at 64 KB)
CREATE TABLE IF NOT EXISTS push_requests
(
    app_id LowCardinality(String),
    request_id String,
    generation UInt32,
    org_id UInt64,
    campaign_key String,
    campaign_id UInt64,
    creative String,
    origin LowCardinality(String),
    target_type LowCardinality(String),
    all_devices UInt8,
    messages UInt32,
    targets String,
    received_at DateTime64(3, 'UTC'),
    status LowCardinality(String),
    targeted UInt64,
    unmatched UInt64,
    pages UInt32,
    cursor String,
    error String,
    planned_at Nullable(DateTime64(3, 'UTC')),
    version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (app_id, request_id, generation);

-- One row per (request, install): what became of the delivery. Written by the sender once the
-- transport answered, never twice for one install of one request (the sender skips installs
-- already recorded, so a batch redelivered after a crash records only what it had not).
--   status      'sent' or 'failed' (error says why: the transport's answer, 'unsupported
--               platform', 'no transport configured for android', retries exhausted)
--   transport   file, webhook, apns, fcm ('' when none was configured)
--   attempts    tries of the transport (1 = first try)
--   planned_at  when the planner emitted the batch; first_attempt_at / finished_at: the sender's
CREATE TABLE IF NOT EXISTS push_deliveries
(
    app_id LowCardinality(String),
    request_id String,
    generation UInt32,
    campaign_key String,
    campaign_id UInt64,
    creative String,
    install_uuid String,
    customer_id String,
    platform LowCardinality(String),
    transport LowCardinality(String),
    status LowCardinality(String),
    error String,
    attempts UInt16,
    message_index UInt32,
    batch_id String,
    planned_at DateTime64(3, 'UTC'),
    first_attempt_at DateTime64(3, 'UTC'),
    finished_at DateTime64(3, 'UTC'),
    version UInt64,
    INDEX idx_campaign_key campaign_key TYPE bloom_filter GRANULARITY 4
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (app_id, request_id, generation, install_uuid);

-- campaign_key roll-ups, for analysts (GET /v2/push/:app_id/reports/:campaign_key answers the
-- same figures for one key). Opens are events named 'Push Opened' or 'Localytics Push Opened'
-- (SDK or server-side) whose attributes carry the push's campaign_key or request_id; `opened`
-- counts the installs (the event's uuid when it has no install) that opened one.
CREATE VIEW IF NOT EXISTS push_campaign_reports AS
SELECT
    r.app_id AS app_id,
    r.campaign_key AS campaign_key,
    r.requests AS requests,
    r.targeted AS targeted,
    d.sent AS sent,
    d.failed AS failed,
    o.opened AS opened,
    r.first_request_at AS first_request_at,
    r.last_request_at AS last_request_at
FROM
(
    SELECT app_id, campaign_key, count() AS requests, sum(targeted) AS targeted,
           min(received_at) AS first_request_at, max(received_at) AS last_request_at
    FROM push_requests FINAL
    WHERE campaign_key != ''
    GROUP BY app_id, campaign_key
) AS r
LEFT JOIN
(
    SELECT app_id, campaign_key, countIf(status = 'sent') AS sent, countIf(status = 'failed') AS failed
    FROM push_deliveries FINAL
    WHERE campaign_key != ''
    GROUP BY app_id, campaign_key
) AS d ON d.app_id = r.app_id AND d.campaign_key = r.campaign_key
LEFT JOIN
(
    SELECT app_id, campaign_key, uniqExact(opener) AS opened
    FROM
    (
        SELECT app_id, attributes['campaign_key'] AS campaign_key,
               if(install_uuid != '', install_uuid, uuid) AS opener
        FROM events
        WHERE event_name IN ('Push Opened', 'Localytics Push Opened') AND attributes['campaign_key'] != ''
        UNION ALL
        SELECT e.app_id AS app_id, q.campaign_key AS campaign_key, e.opener AS opener
        FROM
        (
            SELECT app_id, attributes['request_id'] AS request_id,
                   if(install_uuid != '', install_uuid, uuid) AS opener
            FROM events
            WHERE event_name IN ('Push Opened', 'Localytics Push Opened') AND attributes['request_id'] != ''
        ) AS e
        INNER JOIN
        (
            SELECT DISTINCT app_id, request_id, campaign_key FROM push_requests WHERE campaign_key != ''
        ) AS q ON q.app_id = e.app_id AND q.request_id = e.request_id
    )
    GROUP BY app_id, campaign_key
) AS o ON o.app_id = r.app_id AND o.campaign_key = r.campaign_key;
