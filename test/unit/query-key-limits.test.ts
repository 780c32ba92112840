import { describe, expect, it } from 'vitest'
import { QueryKeyLimits } from '../../services/edge/query/key-limits.ts'
import { SluiceError } from '../../services/shared/errors.ts'
import { manualClock } from '../helpers/manual-clock.ts'

const refusal = (run: () => unknown): SluiceError => {
  try {
    run()
  } catch (err) {
    if (err instanceof SluiceError) return err
    throw err
  }
  throw new Error('expected a 429')
}

describe('query limits per API key', () => {
  it('allows one query at a time per key, another key meanwhile, and the next once it is done', () => {
    const limits = new QueryKeyLimits(
      { concurrent: 1, perMinute: 60, perHour: 150, perDay: 1000 },
      manualClock(),
    )
    const release = limits.acquire('k1')
    const busy = refusal(() => limits.acquire('k1'))
    expect([busy.status, busy.headers?.['Retry-After']]).toEqual([429, '1'])
    expect(busy.message).toContain('at most 1 at a time')
    limits.acquire('k2')()
    release()
    release() // twice is once
    limits.acquire('k1')()
  })

  it('refuses the 61st query of a minute with the wait until the next, then the hour limit', () => {
    const clock = manualClock()
    const limits = new QueryKeyLimits({ concurrent: 1, perMinute: 60, perHour: 150, perDay: 1000 }, clock)
    for (let i = 0; i < 60; i++) limits.acquire('k')()
    const minute = refusal(() => limits.acquire('k'))
    expect(minute.status).toBe(429)
    expect(minute.message).toContain('60 queries per minute')
    expect(Number(minute.headers?.['Retry-After'])).toBe(1)
    // Refused requests take nothing. The hour's bucket holds 150 and gains one every 24 s: after
    // two minutes, 150 + 5 have passed and the next waits 24 s.
    clock.advance(60_000)
    for (let i = 0; i < 60; i++) limits.acquire('k')()
    clock.advance(60_000)
    for (let i = 0; i < 35; i++) limits.acquire('k')()
    const hour = refusal(() => limits.acquire('k'))
    expect(hour.message).toContain('150 queries per hour')
    expect(Number(hour.headers?.['Retry-After'])).toBe(24) // one of 150 an hour comes back every 24 s
  })
})
