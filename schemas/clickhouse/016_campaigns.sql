-- Campaigns (docs/campaigns.md): push and in-app campaigns, their execution and their assignments.

-- One row per campaign version, written by the control applier (create, update, archive, delete
-- commands), read with FINAL. Ids (campaigns and their creatives) come from one sequence each,
-- shared by both channels: max(id) + 1 and max(max_creative_id) + 1, allocated by the single owner.
--   channel          push | inapp
--   status           active | draft, as the client last set it
--   body             the canonical campaign as JSON (schemas/campaigns.ts), creatives with ids
--   activated_at     when the campaign last went from draft (or nothing) to active: a
--                    begin_immediately campaign's occurrence is named after it
CREATE TABLE IF NOT EXISTS campaigns
(
    id UInt64,
    org_id UInt64,
    app_id String,
    channel LowCardinality(String),
    name String,
    status LowCardinality(String),
    archived UInt8,
    deleted UInt8,
    body String,
    max_creative_id UInt64,
    activated_at Nullable(DateTime64(3, 'UTC')),
    created_at DateTime64(3, 'UTC'),
    updated_at DateTime64(3, 'UTC'),
    version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY id;

-- Each occurrence of a push campaign's schedule (one for a one-time schedule, one per date of a
-- recurring one), as its executor moves it along: planning → planned → done (or failed). Keyed by
-- (campaign, occurrence): whichever worker plans it, it is the same row.
--   occurrence   once | YYYY-MM-DD (recurring, in the schedule's zone) | i<ms> (begin_immediately)
--   starts_at    the occurrence's nominal start; ends_at the last due_at of its sends
--   members / held_out / capped / targeted: counts of the plan (held_out: control group)
--   plan_id      the planning attempt whose sends stand (their planned_at, in ms): a plan cut short
--                by a crash is redone under a new id and its rows are ignored, so a slot's installs
--                never change once the occurrence is planned
--   slots / dispatched: slots of the plan and how many have been handed to the push pipeline
CREATE TABLE IF NOT EXISTS campaign_occurrences
(
    campaign_id UInt64,
    occurrence String,
    app_id String,
    state LowCardinality(String),
    starts_at DateTime64(3, 'UTC'),
    ends_at DateTime64(3, 'UTC'),
    members UInt64,
    held_out UInt64,
    capped UInt64,
    targeted UInt64,
    plan_id UInt64,
    slots UInt32,
    dispatched UInt32,
    error String,
    updated_at DateTime64(3, 'UTC'),
    version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (campaign_id, occurrence);

-- Every assignment of an occurrence's plan, control members included: who was in the audience,
-- which variant they got (A, B, … or control), when their push is due and under which push
-- request id it goes out. Frequency caps and conversions read it.
--   variant      the creative letter, or 'control' (held out: no push)
--   outcome      targeted | control | capped (a frequency cap held it back) | no_token
--   slot         the dispatch slot; request_id: campaign:<id>:<occurrence>:<slot>:<variant>
CREATE TABLE IF NOT EXISTS campaign_sends
(
    app_id LowCardinality(String),
    campaign_id UInt64,
    occurrence String,
    install_uuid String,
    customer_id String,
    variant LowCardinality(String),
    creative_id UInt64,
    outcome LowCardinality(String),
    due_at DateTime64(3, 'UTC'),
    slot UInt32,
    request_id String,
    planned_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(planned_at)
ORDER BY (campaign_id, occurrence, install_uuid);
