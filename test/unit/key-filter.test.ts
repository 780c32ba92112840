import { describe, expect, it } from 'vitest'
import { KeyFilter, murmurHash3x86, xxHash32 } from '../../pipelines/events/key-filter.ts'

describe('filter of stored keys', () => {
  it("hashes as ClickHouse's murmurHash3_32 and xxHash32 do (values from chdb 3.4)", () => {
    const cases: [string, number, number][] = [
      ['', 0, 46947589],
      ['a', 1009084850, 1426945110],
      ['abcd', 1139631978, 2741253893],
      ['app\nabcdef01-0002-4000-8000-000000000000', 915919794, 4164014894],
      [`é🎉${'x'.repeat(37)}`, 2523459183, 2838720296],
    ]
    for (const [key, murmur, xx] of cases) {
      expect(murmurHash3x86(Buffer.from(key))).toBe(murmur)
      expect(xxHash32(Buffer.from(key))).toBe(xx)
    }
  })

  it('holds every key added, across layers, with few false positives', () => {
    const filter = new KeyFilter(10_000)
    const keys = Array.from({ length: 50_000 }, (_, i) => `uuid-${i}-é`)
    for (const k of keys) filter.add('app', k)
    expect(filter.size).toBe(50_000)
    // Past its capacity the filter grew new layers; nothing added is ever missing.
    expect(keys.every((k) => filter.mightContain('app', k))).toBe(true)
    // The same uuid in another app is another key.
    let falsePositives = 0
    for (const k of keys) if (filter.mightContain('other', k)) falsePositives++
    expect(falsePositives / keys.length).toBeLessThan(0.05)
  })
})
