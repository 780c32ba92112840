import { DateTime } from 'luxon'
import { z } from 'zod'
import { int } from './config-fields.ts'

/** The export settings (docs/exports.md), an area of the one configuration schema (config.ts). */
export const exportConfig = {
  SLUICE_EXPORT_RATE_PER_KEY_PER_MIN: int(50, 1).describe('Export requests per minute per API key (429).'),
  SLUICE_EXPORT_REFRESH_TIME: z
    .string()
    .meta({ format: 'HH:MM' })
    .regex(/^([01]?[0-9]|2[0-3]):[0-5][0-9]$/, 'must be HH:MM (24-hour)')
    .default('08:00')
    .describe(
      'Wall-clock time of the daily refresh of audience and profile exports, in `SLUICE_EXPORT_REFRESH_ZONE` (once a day, daylight saving time followed).',
    ),
  SLUICE_EXPORT_REFRESH_ZONE: z
    .string()
    .meta({ format: 'IANA time zone' })
    .refine((zone) => DateTime.now().setZone(zone).isValid, 'must be an IANA time zone')
    .default('America/New_York')
    .describe('Time zone of `SLUICE_EXPORT_REFRESH_TIME`.'),
  SLUICE_EXPORT_IDLE_DAYS: int(45, 1).describe(
    'Days without a request after which an export is unavailable.',
  ),
  SLUICE_EXPORT_AUDIENCE_CAP: int(5, 0).describe('Audience exports per org on the standard plan.'),
  SLUICE_EXPORT_AUDIENCE_CAP_REMARKETING: int(20, 0).describe(
    'Audience exports per org on the remarketing plan.',
  ),
  SLUICE_EXPORT_PROFILE_CAP: int(5, 0).describe('Profile db exports per org.'),
  SLUICE_EXPORT_LINK_TTL_SECONDS: int(3600, 10).describe(
    'How long a signed link to an export file is valid.',
  ),
  SLUICE_EXPORT_LOG_GRACE_MINUTES: int(10, 0).describe(
    'How long after an hour ends its log file is written (and before it the export answers 404).',
  ),
  SLUICE_EXPORT_LOG_RETENTION_DAYS: int(30, 1).describe("Days an hour's log file is kept."),
  SLUICE_EXPORT_RESULT_TTL_HOURS: int(48, 1).describe(
    'How long an audience or profile file is kept after it was written (`results_expire_at`).',
  ),
  SLUICE_EXPORT_WAIT_MS: int(30_000, 0).describe(
    'How long an export request waits for its file to be written before answering 404 with Retry-After.',
  ),
  SLUICE_EXPORT_SETTLE_MS: int(2000, 0).describe(
    "The export writer's wait between reading the engine's clock and the data, so inserts in flight commit.",
  ),
  SLUICE_PUBLIC_URL: z
    .string()
    .meta({ format: 'uri' })
    .optional()
    .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim().replace(/\/+$/, '')))
    .pipe(z.url().optional())
    .describe(
      'Base URL of signed export links (e.g. `https://sluice.example.com`); unset: links are paths, resolved by the client.',
    ),
}
