import { describe, expect, it } from 'vitest'
import { TtlCache } from '../../services/control/ttl-cache.ts'
import { TokenBuckets } from '../../services/edge/middleware/rate-limit.ts'
import { manualClock } from '../helpers/manual-clock.ts'

/** A load the test finishes by hand, counting how often it was started. */
function deferredLoads<V>() {
  const pending: ((value: V) => void)[] = []
  const fails: ((err: Error) => void)[] = []
  return {
    load: () =>
      new Promise<V>((resolve, reject) => {
        pending.push(resolve)
        fails.push(reject)
      }),
    calls: () => pending.length,
    resolve: (value: V) => pending.at(-1)!(value),
    reject: (err: Error) => fails.at(-1)!(err),
  }
}

describe('TtlCache', () => {
  it('serves a cached value until the TTL passes, then loads again', async () => {
    const clock = manualClock()
    const cache = new TtlCache<number>(40, { clock })
    let loads = 0
    const load = async () => ++loads
    expect(await cache.get('k', load)).toBe(1)
    clock.advance(39)
    expect(await cache.get('k', load)).toBe(1)
    clock.advance(21)
    expect(await cache.get('k', load)).toBe(2)
    cache.delete('k')
    expect(await cache.get('k', load)).toBe(3)
  })

  it('peeks at a fresh answer without loading: nothing on a miss, during a load or after the TTL', async () => {
    const clock = manualClock()
    const cache = new TtlCache<string | undefined>(40, { clock })
    expect(cache.peek('k')).toBeUndefined()
    const loads = deferredLoads<string | undefined>()
    const loading = cache.get('k', loads.load)
    expect(cache.peek('k')).toBeUndefined()
    loads.resolve('v')
    expect(await loading).toBe('v')
    expect(cache.peek('k')).toEqual({ value: 'v' })
    // "Not found" is an answer too, told from a miss by its box.
    await cache.get('absent', async () => undefined)
    expect(cache.peek('absent')).toEqual({ value: undefined })
    clock.advance(41)
    expect(cache.peek('k')).toBeUndefined()
    expect(loads.calls()).toBe(1)
    expect(new TtlCache<number>(0).peek('k')).toBeUndefined()
  })

  it('does not cache with a TTL of 0', async () => {
    const cache = new TtlCache<number>(0)
    let loads = 0
    await cache.get('k', async () => ++loads)
    await cache.get('k', async () => ++loads)
    expect(loads).toBe(2)
  })

  it('holds at most `max` entries, evicting the least recently used', async () => {
    const cache = new TtlCache<string | undefined>(60_000, { max: 3, clock: manualClock() })
    const loaded: string[] = []
    const get = (key: string) =>
      cache.get(key, async () => {
        loaded.push(key)
        return key.toUpperCase()
      })
    for (const key of ['a', 'b', 'c']) await get(key)
    expect(await get('a')).toBe('A') // a is now the most recently used
    await get('d') // evicts b
    expect(cache.size).toBe(3)
    for (const key of ['a', 'c', 'd']) await get(key)
    expect(loaded).toEqual(['a', 'b', 'c', 'd'])
    await get('b')
    expect(loaded).toEqual(['a', 'b', 'c', 'd', 'b'])
    // Thousands of keys nobody has: the cache stays at its bound.
    for (let i = 0; i < 5000; i++) await cache.get(`guess-${i}`, async () => undefined)
    expect(cache.size).toBe(3)
  })

  it('merges concurrent misses of one key into one load', async () => {
    const cache = new TtlCache<{ id: string } | undefined>(5000, { clock: manualClock() })
    const loads = deferredLoads<{ id: string } | undefined>()
    const waiting = Array.from({ length: 20 }, () => cache.get('k', loads.load))
    expect(loads.calls()).toBe(1)
    loads.resolve({ id: 'k' })
    expect(await Promise.all(waiting)).toEqual(Array.from({ length: 20 }, () => ({ id: 'k' })))
    expect(await cache.get('k', loads.load)).toEqual({ id: 'k' })
    expect(loads.calls()).toBe(1)
  })

  it('caches "not found" for the TTL, and merges its concurrent misses too', async () => {
    const clock = manualClock()
    const cache = new TtlCache<string | undefined>(5000, { clock })
    const loads = deferredLoads<string | undefined>()
    const waiting = [cache.get('nobody', loads.load), cache.get('nobody', loads.load)]
    loads.resolve(undefined)
    expect(await Promise.all(waiting)).toEqual([undefined, undefined])
    expect(await cache.get('nobody', loads.load)).toBeUndefined()
    expect(loads.calls()).toBe(1)
    clock.advance(5001)
    const again = cache.get('nobody', loads.load)
    expect(loads.calls()).toBe(2)
    loads.resolve('created since')
    expect(await again).toBe('created since')
  })

  it('a delete during a load answers the callers waiting but keeps nothing (a revocation is not undone)', async () => {
    const cache = new TtlCache<string>(5000, { clock: manualClock() })
    const loads = deferredLoads<string>()
    const before = cache.get('key', loads.load)
    cache.delete('key')
    loads.resolve('active')
    expect(await before).toBe('active')
    const after = cache.get('key', loads.load)
    expect(loads.calls()).toBe(2)
    loads.resolve('revoked')
    expect(await after).toBe('revoked')
  })

  it('a failed load reaches every caller waiting on it and is not cached', async () => {
    const cache = new TtlCache<string>(5000, { clock: manualClock() })
    const loads = deferredLoads<string>()
    const waiting = [cache.get('k', loads.load), cache.get('k', loads.load)]
    loads.reject(new Error('store down'))
    for (const result of await Promise.allSettled(waiting))
      expect(result).toEqual({ status: 'rejected', reason: new Error('store down') })
    const retry = cache.get('k', loads.load)
    loads.resolve('back')
    expect(await retry).toBe('back')
    expect(loads.calls()).toBe(2)
  })

  it('serves the last answer past its TTL while loads fail, for staleIfErrorMs at most, and never after a delete', async () => {
    const clock = manualClock()
    const cache = new TtlCache<string>(100, { clock, staleIfErrorMs: 1000 })
    let down = false
    let loads = 0
    const load = async () => {
      loads++
      if (down) throw new Error('store down')
      return `v${loads}`
    }
    expect(await cache.get('k', load)).toBe('v1')
    down = true
    clock.advance(150)
    // Expired and the store is down: the last answer, after a load was tried.
    expect(await cache.get('k', load)).toBe('v1')
    expect(loads).toBe(2)
    expect(cache.peek('k')).toBeUndefined()
    // A key never loaded has nothing to fall back on.
    await expect(cache.get('other', load)).rejects.toThrow('store down')
    // Past TTL + staleIfErrorMs the outage reaches the caller.
    clock.advance(1000)
    await expect(cache.get('k', load)).rejects.toThrow('store down')
    // Back: loaded afresh; a delete (a revocation) then leaves nothing to serve in an outage.
    down = false
    expect(await cache.get('k', load)).toBe('v5')
    cache.delete('k')
    down = true
    await expect(cache.get('k', load)).rejects.toThrow('store down')
  })
})

describe('TokenBuckets', () => {
  it('allows `rate` requests per period per key, then says how long to wait', () => {
    const buckets = new TokenBuckets(3, 1000)
    const t = 1_000_000
    expect([buckets.take('a', t), buckets.take('a', t), buckets.take('a', t)]).toEqual([0, 0, 0])
    const wait = buckets.take('a', t)
    expect(wait).toBeGreaterThan(0)
    expect(wait).toBeLessThanOrEqual(1 / 3 + 1e-9)
    expect(buckets.take('b', t)).toBe(0)
    // One token back after a third of a second.
    expect(buckets.take('a', t + 334)).toBe(0)
    expect(buckets.take('a', t + 334)).toBeGreaterThan(0)
  })

  it('reads its injected clock', () => {
    const clock = manualClock()
    const buckets = new TokenBuckets(2, 60_000, clock)
    expect([buckets.take('a'), buckets.take('a')]).toEqual([0, 0])
    expect(buckets.take('a')).toBe(30)
    clock.advance(29_999)
    expect(buckets.take('a')).toBeGreaterThan(0)
    clock.advance(1)
    expect(buckets.take('a')).toBe(0)
  })

  it('wait() tells the time to the next token without taking one', () => {
    const clock = manualClock()
    const buckets = new TokenBuckets(1, 1000, clock)
    expect(buckets.wait('a')).toBe(0)
    expect(buckets.wait('a')).toBe(0)
    expect(buckets.take('a')).toBe(0)
    expect(buckets.wait('a')).toBe(1)
    clock.advance(500)
    expect(buckets.wait('a')).toBe(0.5)
    expect(buckets.wait('a')).toBe(0.5)
    clock.advance(500)
    expect(buckets.wait('a')).toBe(0)
    expect(buckets.take('a')).toBe(0)
  })

  it('a clock stepping back refills nothing and takes nothing away', () => {
    const clock = manualClock()
    const buckets = new TokenBuckets(2, 1000, clock)
    expect(buckets.take('a')).toBe(0)
    clock.advance(-10_000)
    expect(buckets.take('a')).toBe(0)
    expect(buckets.take('a')).toBeGreaterThan(0)
    clock.advance(10_000 + 500)
    expect(buckets.take('a')).toBe(0)
  })
})
