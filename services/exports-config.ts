import { DateTime } from 'luxon'
import { z } from 'zod'

const int = (def: number, min = 0) => z.coerce.number().int().min(min).default(def)

/** The export settings (docs/exports.md), part of the one configuration schema (config.ts). */
export const exportConfig = {
  /** Wall-clock time of the daily refresh of audience and profile exports, in the zone below. */
  SLUICE_EXPORT_REFRESH_TIME: z
    .string()
    .regex(/^([01]?[0-9]|2[0-3]):[0-5][0-9]$/, 'must be HH:MM (24-hour)')
    .default('08:00'),
  SLUICE_EXPORT_REFRESH_ZONE: z
    .string()
    .refine((zone) => DateTime.now().setZone(zone).isValid, 'must be an IANA time zone')
    .default('America/New_York'),
  /** Days without a request after which an export is unavailable. */
  SLUICE_EXPORT_IDLE_DAYS: int(45, 1),
  SLUICE_EXPORT_AUDIENCE_CAP: int(5, 0),
  SLUICE_EXPORT_AUDIENCE_CAP_REMARKETING: int(20, 0),
  SLUICE_EXPORT_PROFILE_CAP: int(5, 0),
  /** How long a signed link to an export file is valid. */
  SLUICE_EXPORT_LINK_TTL_SECONDS: int(3600, 10),
  /** How long after an hour ends its log file is written (and before it the export answers 404). */
  SLUICE_EXPORT_LOG_GRACE_MINUTES: int(10, 0),
  SLUICE_EXPORT_LOG_RETENTION_DAYS: int(30, 1),
  /** How long an audience or profile file is kept after it was written (results_expire_at). */
  SLUICE_EXPORT_RESULT_TTL_HOURS: int(48, 1),
  /** How long an export request waits for its file to be written before answering 404 + Retry-After. */
  SLUICE_EXPORT_WAIT_MS: int(30_000, 0),
  /** The writer's wait between reading the engine clock and the data (inserts in flight commit). */
  SLUICE_EXPORT_SETTLE_MS: int(2000, 0),
  /** Base URL of signed links (e.g. https://sluice.example.com); unset: the request's own. */
  SLUICE_PUBLIC_URL: z
    .string()
    .optional()
    .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim().replace(/\/+$/, '')))
    .pipe(z.url().optional()),
}
