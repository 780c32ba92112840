import { describe, expect, it } from 'vitest'
import { TtlCache } from '../../pipelines/control/ttl-cache.ts'
import { TokenBuckets } from '../../services/edge/middleware/rate-limit.ts'

describe('TtlCache', () => {
  it('serves a cached value until the TTL passes, then loads again', async () => {
    const cache = new TtlCache<number>(40)
    let loads = 0
    const load = async () => ++loads
    expect(await cache.get('k', load)).toBe(1)
    expect(await cache.get('k', load)).toBe(1)
    await new Promise((r) => setTimeout(r, 60))
    expect(await cache.get('k', load)).toBe(2)
    cache.delete('k')
    expect(await cache.get('k', load)).toBe(3)
  })

  it('does not cache with a TTL of 0', async () => {
    const cache = new TtlCache<number>(0)
    let loads = 0
    await cache.get('k', async () => ++loads)
    await cache.get('k', async () => ++loads)
    expect(loads).toBe(2)
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
})
