import { describe, expect, it } from 'vitest'
import {
  assembleProfile,
  pushEnabled,
  vendorAttributes,
  type DeviceFacts,
  type StoredProfile,
} from '../../pipelines/profiles/auto-profile.ts'
import type { ProfileValue } from '../../schemas/profiles.ts'

const NOW = Date.UTC(2024, 5, 10, 12, 0, 0)
const DAY = 86_400_000

function facts(o: Partial<DeviceFacts> = {}): DeviceFacts {
  return {
    app_id: 'app-a',
    customer_id: 'c1',
    last_active_at: NOW - DAY,
    first_session_at: NOW - 30 * DAY,
    last_session_at: NOW - DAY,
    app_version: '2.1.0',
    os_version: '17.1',
    country: 'fr',
    language: 'fr',
    device_timezone: 'Europe/Paris',
    push_token: 'tok',
    push_status: 'Enabled (Prominent)',
    user_type: 'known',
    sessions: 4,
    ...o,
  }
}

describe('vendorAttributes', () => {
  it('maps one app’s device state to the auto-profile names', () => {
    expect(vendorAttributes([facts()], NOW)).toEqual({
      app_version: '2.1.0',
      os_version: '17.1',
      total_sessions: 4,
      birthdate: '2024-05-11',
      last_session_date: '2024-06-09',
      seconds_since_last_session: 86_400,
      push_enabled: true,
      user_type: 'known',
      country: 'fr',
      device_timezone: 'Europe/Paris',
      language: 'fr',
    })
  })

  it('across apps: dimensions of the latest device, sessions summed, first and last session dates', () => {
    const older = facts({
      app_id: 'a',
      last_active_at: NOW - 5 * DAY,
      first_session_at: NOW - 90 * DAY,
      last_session_at: NOW - 5 * DAY,
      country: 'de',
      sessions: 7,
    })
    const newer = facts({
      app_id: 'b',
      last_active_at: NOW - 3600_000,
      first_session_at: NOW - 10 * DAY,
      last_session_at: NOW - 3600_000,
      country: 'us',
      app_version: '3.0',
      sessions: 2,
    })
    expect(vendorAttributes([older, newer], NOW)).toMatchObject({
      country: 'us',
      app_version: '3.0',
      total_sessions: 9,
      birthdate: '2024-03-12',
      last_session_date: '2024-06-10',
      seconds_since_last_session: 3600,
    })
  })

  it('leaves out what is unknown', () => {
    const bare = facts({
      first_session_at: null,
      last_session_at: null,
      app_version: '',
      os_version: '',
      country: '',
      language: '',
      device_timezone: '',
      user_type: '',
      push_status: '',
      push_token: '',
      sessions: 0,
    })
    expect(vendorAttributes([bare], NOW)).toEqual({ total_sessions: 0, push_enabled: false })
    expect(vendorAttributes([], NOW)).toEqual({})
  })

  it.each([
    ['Enabled (Prominent)', '', true],
    ['Enable (Delivered Quietly)', '', true],
    ['Provisional', '', true],
    ['Disabled', 'tok', false],
    ['', 'tok', true],
    ['', '', false],
  ])('push status %j with token %j → %s', (status, token, expected) => {
    expect(pushEnabled(status, token)).toBe(expected)
  })
})

describe('assembleProfile: existence', () => {
  const attrs = new Map<string, ProfileValue>([['plan', { type: 'string', value: 'gold' }]])
  const stored = (o: Partial<StoredProfile>): StoredProfile => ({
    profiledb_id: 1,
    app_id: '',
    customer_id: 'c1',
    attributes: attrs,
    updated_at: NOW - 2 * DAY,
    ...o,
  })

  it('a stored profile exists, with its vendor attributes', () => {
    expect(assembleProfile(stored({}), [facts()], NOW)).toEqual({
      attributes: { plan: 'gold' },
      vendor: { attributes: vendorAttributes([facts()], NOW) },
    })
  })

  it('a stored profile without SDK data has empty vendor attributes', () => {
    expect(assembleProfile(stored({}), [], NOW)).toEqual({
      attributes: { plan: 'gold' },
      vendor: { attributes: {} },
    })
  })

  it('no profile and no SDK data: absent', () => {
    expect(assembleProfile(undefined, [], NOW)).toBeUndefined()
  })

  it('a customer the SDK has seen has an auto-profile', () => {
    expect(assembleProfile(undefined, [facts()], NOW)).toEqual({
      attributes: {},
      vendor: { attributes: vendorAttributes([facts()], NOW) },
    })
  })

  it('a deleted profile stays absent until the SDK sees the customer again', () => {
    const deleted = stored({ attributes: null, updated_at: NOW - DAY / 2 })
    expect(assembleProfile(deleted, [facts({ last_active_at: NOW - DAY })], NOW)).toBeUndefined()
    expect(assembleProfile(deleted, [], NOW)).toBeUndefined()
    expect(assembleProfile(deleted, [facts({ last_active_at: NOW - 1000 })], NOW)).toMatchObject({
      attributes: {},
    })
  })
})
