-- The push token and platform of each targeted member as the plan read them: the campaign
-- executor plans an occurrence in one INSERT … SELECT (pipelines/campaigns/plan-sql.ts), and the
-- push planner reads a slot's pages from the plan alone, as columns, like a broadcast's pages
-- (pipelines/campaigns/slot-targets.ts), instead of a second lookup of every install's device.
-- Rows planned before carry '' and are read with their device's token (the fallback there).
ALTER TABLE campaign_sends ADD COLUMN IF NOT EXISTS platform LowCardinality(String) DEFAULT '' AFTER planned_at, ADD COLUMN IF NOT EXISTS push_token String DEFAULT '' AFTER platform;
