import { DateTime, IANAZone } from 'luxon'
import {
  DEFAULT_ABSOLUTE_ZONE_ID,
  DEFAULT_LOCAL_START_ZONE_ID,
  zoneOfId,
} from '../../schemas/campaign-time-zones.ts'
import { hasOffset } from '../../schemas/campaigns.ts'

/**
 * Time arithmetic of campaign schedules (docs/campaigns.md, "Schedules and time zones"), pure.
 * A date-time with an offset (Z, +02:00) is that instant. One without is a wall-clock time, read
 * in the schedule's starting time zone (UTC when none is given). In local-time delivery
 * (`send_local_tz`) only the wall-clock digits count: each device gets them in its own zone.
 */

export interface WallClock {
  year: number
  month: number
  day: number
  hour: number
  minute: number
  second: number
  millisecond: number
}

const DAY_MS = 86_400_000

const normalise = (s: string) => {
  const t = s.trim().replace(' ', 'T')
  // +0200 → +02:00, which luxon reads; a date alone is midnight.
  return t.replace(/([+-]\d{2})(\d{2})$/, '$1:$2')
}

export const absoluteZone = (zoneId: number | undefined) => zoneOfId(zoneId ?? DEFAULT_ABSOLUTE_ZONE_ID)
export const localStartZone = (zoneId: number | undefined) => zoneOfId(zoneId ?? DEFAULT_LOCAL_START_ZONE_ID)

/** The instant a schedule's date-time names (ms since the epoch). */
export function parseInstant(s: string, zoneId: number | undefined): number {
  const text = normalise(s)
  const dt = hasOffset(text)
    ? DateTime.fromISO(text, { setZone: true })
    : DateTime.fromISO(text, { zone: absoluteZone(zoneId) })
  if (!dt.isValid) throw new Error(`invalid date-time ${s}`)
  return dt.toMillis()
}

/** The wall-clock digits of a date-time, whatever its offset. */
export function wallClockOf(s: string): WallClock {
  const text = normalise(s)
  const dt = hasOffset(text)
    ? DateTime.fromISO(text, { setZone: true })
    : DateTime.fromISO(text, { zone: 'UTC' })
  if (!dt.isValid) throw new Error(`invalid date-time ${s}`)
  const { year, month, day, hour, minute, second, millisecond } = dt
  return { year, month, day, hour, minute, second, millisecond }
}

/** When a zone's clocks show this wall-clock time (a time skipped by DST moves forward, as luxon does). */
export function atWallClock(wc: WallClock, zone: string): number {
  return DateTime.fromObject(wc, { zone }).toMillis()
}

/**
 * A device's `device_timezone` as a zone: an IANA name (Europe/Paris), or a fixed offset as SDKs
 * before named zones sent it (+02:00, -0530, UTC+2, GMT-3). Anything else: undefined.
 */
export function deviceZone(tz: string): string | undefined {
  const t = tz.trim()
  if (t === '') return undefined
  if (IANAZone.isValidZone(t)) return t
  const m = /^(?:UTC|GMT)?\s*([+-])(\d{1,2})(?::?(\d{2}))?$/i.exec(t)
  if (!m) return undefined
  const hours = Number(m[2])
  const minutes = Number(m[3] ?? 0)
  if (hours > 14 || minutes > 59) return undefined
  return `UTC${m[1]}${hours}${minutes > 0 ? `:${String(minutes).padStart(2, '0')}` : ''}`
}

/**
 * Local-time delivery: the wall-clock time `wc` in the device's zone, at the first such instant at
 * or after `start` (the same wall-clock time in the starting zone). Sends proceed westward for
 * 24 hours from `start`, so every zone gets exactly one instant in [start, start + 24 h).
 */
export function localDeliveryTime(wc: WallClock, start: number, zone: string | undefined): number {
  if (!zone) return start
  let best = Number.POSITIVE_INFINITY
  const base = DateTime.fromObject(wc, { zone })
  for (const days of [-1, 0, 1]) {
    const t = base.plus({ days }).toMillis()
    if (t >= start && t < best) best = t
  }
  return best === Number.POSITIVE_INFINITY || best >= start + DAY_MS ? start : best
}

/**
 * Optimized delivery: the first whole hour at or after `start` whose UTC hour is the device's
 * usual hour of activity (from its sessions), within the 24 hours from `start`; `start` itself
 * (the fallback time) when the device has no usual hour.
 */
export function optimizedDeliveryTime(start: number, usualUtcHour: number | undefined): number {
  if (usualUtcHour === undefined) return start
  const hourStart = Math.ceil(start / 3_600_000) * 3_600_000
  for (let h = 0; h < 24; h++) {
    const t = hourStart + h * 3_600_000
    if (new Date(t).getUTCHours() === usualUtcHour) return t
  }
  return start
}

export const DAY_NAMES = [
  'sunday',
  'monday',
  'tuesday',
  'wednesday',
  'thursday',
  'friday',
  'saturday',
] as const

export interface RecurringRule {
  begin_date: string
  end_date: string
  starting_time_zone_id?: number
  send_local_tz?: boolean
  intervals: readonly { interval: 'daily' | 'weekly' | 'monthly'; day_of_week?: string; on_day?: number }[]
}

/** The zone a recurring or scheduled campaign counts its days and times in. */
export const scheduleZone = (s: { starting_time_zone_id?: number; send_local_tz?: boolean }) =>
  s.send_local_tz ? localStartZone(s.starting_time_zone_id) : absoluteZone(s.starting_time_zone_id)

/** The start of a dated occurrence: `begin_date`'s time of day on that date, in the schedule's zone. */
function occurrenceOn(date: DateTime, wc: WallClock, zone: string): number {
  return atWallClock({ ...wc, year: date.year, month: date.month, day: date.day }, zone)
}

function matches(date: DateTime, interval: RecurringRule['intervals'][number]): boolean {
  if (interval.interval === 'daily') return true
  if (interval.interval === 'weekly') return DAY_NAMES[date.weekday % 7] === interval.day_of_week
  const onDay = interval.on_day ?? 1
  // The 31st of a 30-day month is its last day.
  return date.day === Math.min(onDay, date.daysInMonth ?? 31)
}

/**
 * The occurrences of a recurring schedule that start in [from, to], oldest first: `key` is the
 * date in the schedule's zone (YYYY-MM-DD), the same however often it is computed.
 */
export function recurringOccurrences(
  rule: RecurringRule,
  from: number,
  to: number,
): { key: string; at: number }[] {
  const zone = scheduleZone(rule)
  const wc = wallClockOf(rule.begin_date)
  const begin = rule.send_local_tz
    ? atWallClock(wc, zone)
    : parseInstant(rule.begin_date, rule.starting_time_zone_id)
  const end = rule.send_local_tz
    ? atWallClock(wallClockOf(rule.end_date), zone)
    : parseInstant(rule.end_date, rule.starting_time_zone_id)
  const lo = Math.max(from, begin)
  const hi = Math.min(to, end)
  if (lo > hi) return []
  const out: { key: string; at: number }[] = []
  let day = DateTime.fromMillis(lo, { zone }).startOf('day').minus({ days: 1 })
  const last = DateTime.fromMillis(hi, { zone }).startOf('day').plus({ days: 1 })
  while (day <= last) {
    if (rule.intervals.some((i) => matches(day, i))) {
      const at = occurrenceOn(day, wc, zone)
      if (at >= lo && at <= hi) out.push({ key: day.toISODate()!, at })
    }
    day = day.plus({ days: 1 })
  }
  return out
}

/** The first occurrence of one interval at or after `begin_date` (the answer's `interval_start`). */
export function intervalStart(
  rule: RecurringRule,
  interval: RecurringRule['intervals'][number],
): string | undefined {
  const zone = scheduleZone(rule)
  const wc = wallClockOf(rule.begin_date)
  const begin = rule.send_local_tz
    ? atWallClock(wc, zone)
    : parseInstant(rule.begin_date, rule.starting_time_zone_id)
  let day = DateTime.fromMillis(begin, { zone }).startOf('day')
  for (let i = 0; i < 370; i++) {
    if (matches(day, interval)) {
      const at = occurrenceOn(day, wc, zone)
      if (at >= begin) return new Date(at).toISOString()
    }
    day = day.plus({ days: 1 })
  }
  return undefined
}
