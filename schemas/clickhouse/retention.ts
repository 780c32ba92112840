/**
 * The tables whose rows grow with traffic, and the time a row's age is counted from: what a
 * deployment bounds with the retention settings (services/config.ts). The migration step
 * (pipelines/connectors/store/retention.ts) sets each one's TTL to `<time> + INTERVAL <days> DAY`.
 *
 * Left out on purpose: state that grows with installs or customers, not with traffic (`devices`,
 * `customer_devices`, `profiles`); tables that expire rows already (`event_uuid_index` 8 days,
 * `raw_log` and `control_results` 30 days, the import staging tables); `campaign_sends`, which
 * frequency caps and conversions read back over a campaign's whole life; and `dead_letters`,
 * whose rows wait for an operator's replay. docs/scaling.md says so too.
 */
export interface RetainedTable {
  /** A DateTime expression over the table's columns: a row expires `days` after it. */
  time: string
  /** The TTL in days its migration gave it; absent: none (rows kept until deleted). */
  migrationDays?: number
  why: string
}

const TABLES = {
  events: {
    time: 'toDateTime(event_time)',
    why: 'one row per accepted event; partitioned by the month of event_time, so whole months go at once',
  },
  sessions: { time: 'toDateTime(started_at)', why: 'one row per session start' },
  query_rollup: {
    time: 'hour',
    why: 'the Query API rollup: rows per app, hour and event name, far fewer than events; kept longer, it answers for hours whose events are gone',
  },
  query_session_hours: {
    time: 'hour',
    why: "the Query API's session hours: a row per app, hour and session seen in it; under the rollup's setting, as it is a rollup too",
  },
  profile_changes: { time: 'toDateTime(at)', why: 'one row per applied profile write' },
  upload_receipts: {
    time: 'toDateTime(received_at)',
    migrationDays: 30,
    why: 'one row per upload (and per group of it)',
  },
  rejected_lines: {
    time: 'toDateTime(received_at)',
    migrationDays: 30,
    why: 'one row per rejected line of an upload',
  },
  push_deliveries: { time: 'toDateTime(planned_at)', why: 'one row per push delivered to an install' },
} satisfies Record<string, RetainedTable>

export type RetainedTableName = keyof typeof TABLES

export const RETAINED_TABLES: Readonly<Record<RetainedTableName, RetainedTable>> = TABLES

/** The longest TTL a setting may give: 100 years. */
export const MAX_RETENTION_DAYS = 36_500
