import { describe, expect, it } from 'vitest'
import {
  deviceZone,
  intervalStart,
  localDeliveryTime,
  optimizedDeliveryTime,
  parseInstant,
  recurringOccurrences,
  wallClockOf,
} from '../../pipelines/campaigns/schedule-time.ts'
import { STARTING_TIME_ZONES } from '../../schemas/campaign-time-zones.ts'

const t = (iso: string) => Date.parse(iso)

describe('campaign schedule time', () => {
  it('reads a date-time with an offset as that instant, one without in the starting zone (UTC by default)', () => {
    expect(parseInstant('2030-06-01T09:00:00Z', 32)).toBe(t('2030-06-01T09:00:00Z'))
    expect(parseInstant('2030-06-01T09:00:00+0200', undefined)).toBe(t('2030-06-01T07:00:00Z'))
    expect(parseInstant('2030-06-01T09:00:00', undefined)).toBe(t('2030-06-01T09:00:00Z'))
    // id 32 is America/New_York: EDT in June (UTC−4), EST in January (UTC−5).
    expect(parseInstant('2030-06-01T09:00:00', 32)).toBe(t('2030-06-01T13:00:00Z'))
    expect(parseInstant('2030-01-15 09:00', 32)).toBe(t('2030-01-15T14:00:00Z'))
  })

  it('maps every starting_time_zone_id to a zone luxon knows, westward from the Date Line', () => {
    const offsets = [...STARTING_TIME_ZONES.keys()].map((id) => {
      const at = parseInstant('2030-01-15T12:00:00', id)
      return (t('2030-01-15T12:00:00Z') - at) / 3_600_000
    })
    expect(offsets[0]).toBe(14)
    expect(offsets.at(-1)).toBe(-12)
    for (let i = 1; i < offsets.length; i++) expect(offsets[i]!).toBeLessThanOrEqual(offsets[i - 1]! + 1)
  })

  it('understands device zones as IANA names or fixed offsets', () => {
    expect(deviceZone('Europe/Paris')).toBe('Europe/Paris')
    expect(deviceZone('+05:30')).toBe('UTC+5:30')
    expect(deviceZone('GMT-3')).toBe('UTC-3')
    expect(deviceZone('Mars/Olympus')).toBeUndefined()
    expect(deviceZone('')).toBeUndefined()
  })

  it('delivers local time in each zone once, within the 24 hours from the starting zone', () => {
    const wc = wallClockOf('2030-06-01T09:00:00')
    // Start at the Date Line (UTC+14): 09:00 there is 2030-05-31T19:00Z.
    const start = t('2030-05-31T19:00:00Z')
    expect(localDeliveryTime(wc, start, 'Pacific/Kiritimati')).toBe(start)
    expect(localDeliveryTime(wc, start, 'Europe/Paris')).toBe(t('2030-06-01T07:00:00Z'))
    expect(localDeliveryTime(wc, start, 'America/Los_Angeles')).toBe(t('2030-06-01T16:00:00Z'))
    // Starting in New York: Paris's 09:00 of that day has passed, so Paris gets the next day's.
    const nyStart = t('2030-06-01T13:00:00Z')
    expect(localDeliveryTime(wc, nyStart, 'Europe/Paris')).toBe(t('2030-06-02T07:00:00Z'))
    expect(localDeliveryTime(wc, nyStart, undefined)).toBe(nyStart)
  })

  it('delivers optimized pushes at the usual hour, or at the fallback time', () => {
    const fallback = t('2030-06-01T10:30:00Z')
    expect(optimizedDeliveryTime(fallback, undefined)).toBe(fallback)
    expect(optimizedDeliveryTime(fallback, 18)).toBe(t('2030-06-01T18:00:00Z'))
    expect(optimizedDeliveryTime(fallback, 10)).toBe(t('2030-06-02T10:00:00Z'))
    expect(optimizedDeliveryTime(fallback, 11)).toBe(t('2030-06-01T11:00:00Z'))
  })

  it('lists recurring occurrences by date in the schedule zone, keyed the same every time', () => {
    const rule = {
      begin_date: '2030-03-01T09:00:00',
      end_date: '2030-03-31T23:00:00',
      starting_time_zone_id: 22, // Europe/Paris: CET, then CEST from 2030-03-31
      intervals: [
        { interval: 'weekly' as const, day_of_week: 'sunday' },
        { interval: 'monthly' as const, on_day: 31 },
      ],
    }
    const all = recurringOccurrences(rule, 0, t('2031-01-01T00:00:00Z'))
    expect(all).toEqual([
      { key: '2030-03-03', at: t('2030-03-03T08:00:00Z') },
      { key: '2030-03-10', at: t('2030-03-10T08:00:00Z') },
      { key: '2030-03-17', at: t('2030-03-17T08:00:00Z') },
      { key: '2030-03-24', at: t('2030-03-24T08:00:00Z') },
      { key: '2030-03-31', at: t('2030-03-31T07:00:00Z') },
    ])
    expect(
      recurringOccurrences(rule, t('2030-03-10T08:00:00Z'), t('2030-03-17T08:00:00Z')).map((o) => o.key),
    ).toEqual(['2030-03-10', '2030-03-17'])
    expect(intervalStart(rule, rule.intervals[0]!)).toBe('2030-03-03T08:00:00.000Z')
    // on_day 31 of a 30-day month is its last day.
    expect(
      recurringOccurrences(
        {
          ...rule,
          begin_date: '2030-04-01T09:00:00',
          end_date: '2030-05-01T09:00:00',
          intervals: [{ interval: 'monthly', on_day: 31 }],
        },
        0,
        t('2031-01-01T00:00:00Z'),
      ).map((o) => o.key),
    ).toEqual(['2030-04-30'])
  })
})
