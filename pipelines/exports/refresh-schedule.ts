import { DateTime } from 'luxon'
import { HOUR_MS } from './export-kinds.ts'

/**
 * When the daily refresh runs: at a wall-clock time in a time zone (08:00 America/New_York by
 * default), so it moves with daylight saving time and is not a multiple of a fixed interval since
 * the epoch. The refresh of a day is named by the instant of that day's refresh time: every
 * scheduler computes the same instant from the same clock reading, so the due-job command (and
 * its id) is the same wherever and however often it is emitted.
 */
export interface RefreshTime {
  /** 0..23 */
  hour: number
  /** 0..59 */
  minute: number
  /** An IANA zone, e.g. America/New_York. */
  zone: string
}

/** `HH:MM` (24-hour); undefined if malformed. */
export function parseRefreshTime(text: string, zone: string): RefreshTime | undefined {
  const m = /^(\d{1,2}):(\d{2})$/.exec(text.trim())
  if (!m) return undefined
  const hour = Number(m[1])
  const minute = Number(m[2])
  if (hour > 23 || minute > 59) return undefined
  if (!DateTime.now().setZone(zone).isValid) return undefined
  return { hour, minute, zone }
}

/**
 * The latest refresh instant at or before `now` (ms): today's refresh time in the zone if it has
 * passed, else yesterday's. On a day whose refresh time falls in a DST gap, luxon moves it
 * forward to the first valid instant; the same on every scheduler.
 */
export function latestRefreshAt(now: number, time: RefreshTime): number {
  const local = DateTime.fromMillis(now, { zone: time.zone })
  const today = local.set({ hour: time.hour, minute: time.minute, second: 0, millisecond: 0 })
  const instant = today.toMillis() <= now ? today : today.minus({ days: 1 })
  return instant.toMillis()
}

/** The calendar date (in the zone) of a refresh instant: what names the day's files. */
export function refreshDate(instant: number, zone: string): string {
  return DateTime.fromMillis(instant, { zone }).toISODate() ?? new Date(instant).toISOString().slice(0, 10)
}

/**
 * An hour of the raw log is complete once it has ended and the grace for late SDK rows has
 * passed; hours that old are what the hourly job writes.
 */
export const hourComplete = (hourStart: number, now: number, graceMs: number) =>
  hourStart + HOUR_MS + graceMs <= now

/** The start of the hour (UTC) holding `ms`. */
export const hourStartOf = (ms: number) => ms - (((ms % HOUR_MS) + HOUR_MS) % HOUR_MS)
