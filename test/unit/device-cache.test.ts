import { describe, expect, it } from 'vitest'
import { DeviceCache } from '../../pipelines/events/device-cache.ts'
import type { DeviceDims } from '../../pipelines/events/event-row.ts'

const device = (install: string): DeviceDims => ({
  install_uuid: install,
  device_uuid: `dev-${install}`,
  session_uuid: 's',
  country: 'fr',
  language: 'fr',
  app_version: '1',
  os_version: '17',
  platform: 'iOS',
  model: 'iPhone',
  device_timezone: 'Europe/Paris',
})
const alice = { app: 'app', customer: 'alice' }
const bob = { app: 'app', customer: 'bob' }

describe('DeviceCache', () => {
  it('remembers what a look-up found when no write of customer_devices ran meanwhile', () => {
    const cache = new DeviceCache()
    const since = cache.generation
    cache.remember([[alice, device('a1')]], since)
    expect(cache.get('app', 'alice')?.install_uuid).toBe('a1')
    expect(cache.get('other-app', 'alice')).toBeUndefined()
    expect(cache.get('app', 'bob')).toBeUndefined()
  })

  it('keeps nothing from a look-up that a write started or ended during', () => {
    const cache = new DeviceCache()
    const since = cache.generation
    cache.forget([{ app_id: 'app', customer_id: 'carol' }]) // any customer's write: the answer may be stale
    cache.remember([[alice, device('a1')]], since)
    expect(cache.get('app', 'alice')).toBeUndefined()
    expect(cache.size).toBe(0)
  })

  it('forgets the customers the SDK builder writes, and only them', () => {
    const cache = new DeviceCache()
    cache.remember(
      [
        [alice, device('a1')],
        [bob, device('b1')],
      ],
      cache.generation,
    )
    cache.forget([{ app_id: 'app', customer_id: 'alice' }])
    expect(cache.get('app', 'alice')).toBeUndefined()
    expect(cache.get('app', 'bob')?.install_uuid).toBe('b1')
  })

  it('holds at most its bound of customers, dropping the least recently used', () => {
    const cache = new DeviceCache(2)
    cache.remember([[alice, device('a1')]], cache.generation)
    cache.remember([[bob, device('b1')]], cache.generation)
    expect(cache.get('app', 'alice')?.install_uuid).toBe('a1') // alice used last
    cache.remember([[{ app: 'app', customer: 'carol' }, device('c1')]], cache.generation)
    expect(cache.size).toBe(2)
    expect(cache.get('app', 'bob')).toBeUndefined()
    expect(cache.get('app', 'alice')?.install_uuid).toBe('a1')
  })
})
