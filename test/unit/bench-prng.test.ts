import { describe, expect, it } from 'vitest'
import { deriveSeed, hex, int, mulberry32, pick, weighted } from '../../bench/prng.ts'

const take = (random: () => number, n: number) => Array.from({ length: n }, () => random())

describe('bench PRNG (mulberry32)', () => {
  it('gives the same sequence for the same seed', () => {
    expect(take(mulberry32(42), 1000)).toEqual(take(mulberry32(42), 1000))
  })

  it('gives a known sequence, so generated load never changes between versions of the bench', () => {
    // The reference mulberry32 (seed 1): 0.6270739405881613, 0.002735721180215478, ...
    expect(take(mulberry32(1), 3)).toEqual([0.6270739405881613, 0.002735721180215478, 0.5274470399599522])
  })

  it('gives different sequences for different seeds', () => {
    expect(take(mulberry32(1), 10)).not.toEqual(take(mulberry32(2), 10))
  })

  it('stays in [0, 1) and spreads evenly', () => {
    const values = take(mulberry32(7), 100_000)
    expect(Math.min(...values)).toBeGreaterThanOrEqual(0)
    expect(Math.max(...values)).toBeLessThan(1)
    const buckets = new Array<number>(10).fill(0)
    for (const v of values) buckets[Math.floor(v * 10)]!++
    for (const b of buckets) expect(b).toBeGreaterThan(9_000)
  })

  it('draws integers within bounds, picks and weighted picks deterministically', () => {
    const r = mulberry32(3)
    const ints = Array.from({ length: 1000 }, () => int(r, 5, 9))
    expect(new Set(ints)).toEqual(new Set([5, 6, 7, 8, 9]))
    expect(pick(mulberry32(9), ['a', 'b', 'c'])).toBe(pick(mulberry32(9), ['a', 'b', 'c']))
    const w = mulberry32(11)
    const counts = { a: 0, b: 0 }
    for (let i = 0; i < 10_000; i++)
      counts[
        weighted(w, [
          ['a', 9],
          ['b', 1],
        ] as const)
      ]++
    expect(counts.a).toBeGreaterThan(8_500)
    expect(counts.b).toBeGreaterThan(700)
    expect(() => pick(r, [])).toThrow()
  })

  it('derives independent, stable seeds per label and formats hex', () => {
    expect(deriveSeed(1, 'customers')).toBe(deriveSeed(1, 'customers'))
    expect(deriveSeed(1, 'customers')).not.toBe(deriveSeed(1, 'profiles'))
    expect(deriveSeed(1, 'x')).not.toBe(deriveSeed(2, 'x'))
    expect(hex(mulberry32(5), 13)).toMatch(/^[0-9a-f]{13}$/)
  })
})
