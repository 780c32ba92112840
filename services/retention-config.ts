import type { Retention } from '../pipelines/connectors/store/retention.ts'
import type { Config } from './config.ts'

/**
 * Each retained table's TTL in days from its retention setting (undefined: the table's
 * migration default); the migration step applies them (docs/scaling.md, "Retention per table").
 * The receipts and their rejected lines share one setting: a receipt lists its rejections.
 */
export function retentionSettings(config: Config): Retention {
  return {
    events: config.SLUICE_RETENTION_EVENTS_DAYS,
    sessions: config.SLUICE_RETENTION_SESSIONS_DAYS,
    query_rollup: config.SLUICE_RETENTION_ROLLUP_DAYS,
    query_session_hours: config.SLUICE_RETENTION_ROLLUP_DAYS,
    profile_changes: config.SLUICE_RETENTION_PROFILE_CHANGES_DAYS,
    push_deliveries: config.SLUICE_RETENTION_PUSH_DELIVERIES_DAYS,
    upload_receipts: config.SLUICE_RETENTION_UPLOAD_RECEIPTS_DAYS,
    rejected_lines: config.SLUICE_RETENTION_UPLOAD_RECEIPTS_DAYS,
  }
}
