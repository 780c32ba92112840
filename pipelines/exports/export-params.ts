import {
  AUDIENCE_JOB_TYPES,
  PROFILE_JOB_TYPES,
  type AudienceJobType,
  type ProfileJobType,
} from './export-kinds.ts'

/**
 * The parameters of the export endpoints, parsed (pure). Anything malformed answers 404, as the
 * spec's export tables have no 400: a path that names no export is an unknown export.
 */
export type Parsed<T> = { ok: true; value: T } | { ok: false; reason: string }

const fail = (reason: string): { ok: false; reason: string } => ({ ok: false, reason })

/** A positive integer id written in decimal digits only (no sign, no exponent, no spaces). */
export function parsePositiveId(raw: string | undefined, name: string): Parsed<number> {
  if (raw === undefined || !/^[0-9]{1,15}$/.test(raw)) return fail(`${name} must be a positive integer`)
  const value = Number(raw)
  if (value < 1) return fail(`${name} must be a positive integer`)
  return { ok: true, value }
}

export function parseIdentifierType(raw: string | undefined): Parsed<AudienceJobType> {
  return (AUDIENCE_JOB_TYPES as readonly string[]).includes(raw ?? '')
    ? { ok: true, value: raw as AudienceJobType }
    : fail(`identifier_type must be one of ${AUDIENCE_JOB_TYPES.join(', ')}`)
}

export function parseProfileJobType(raw: string | undefined): Parsed<ProfileJobType> {
  return (PROFILE_JOB_TYPES as readonly string[]).includes(raw ?? '')
    ? { ok: true, value: raw as ProfileJobType }
    : fail(`job_type must be one of ${PROFILE_JOB_TYPES.join(', ')}`)
}

/**
 * `:year/:month/:day/:hour` of a log export: four-digit year, month 1..12 and hour 0..23 with or
 * without a leading zero, a day that exists in that month. Returns the hour's start (UTC, ms).
 */
export function parseLogHour(
  year: string | undefined,
  month: string | undefined,
  day: string | undefined,
  hour: string | undefined,
): Parsed<number> {
  if (year === undefined || !/^[0-9]{4}$/.test(year)) return fail('year must have four digits')
  const m = smallNumber(month, 1, 12)
  if (m === undefined) return fail('month must be 1 (or 01) to 12')
  const h = smallNumber(hour, 0, 23)
  if (h === undefined) return fail('hour must be 0 (or 00) to 23')
  const y = Number(year)
  const daysInMonth = new Date(Date.UTC(y, m, 0)).getUTCDate()
  const d = smallNumber(day, 1, daysInMonth)
  if (d === undefined)
    return fail(`day must be 1 (or 01) to ${daysInMonth} in ${year}-${String(m).padStart(2, '0')}`)
  const start = Date.UTC(y, m - 1, d, h)
  return { ok: true, value: start }
}

/** One or two digits within [min, max]. */
function smallNumber(raw: string | undefined, min: number, max: number): number | undefined {
  if (raw === undefined || !/^[0-9]{1,2}$/.test(raw)) return undefined
  const value = Number(raw)
  return value >= min && value <= max ? value : undefined
}

/** `2026-11-23T13`: how a log hour names its file and its key. */
export const hourLabel = (hourStart: number) => new Date(hourStart).toISOString().slice(0, 13)
