import { describe, expect, it } from 'vitest'
import { KeyFilter, keyHashes, murmurHash3x86, xxHash32 } from '../../pipelines/events/key-filter.ts'

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

  it('keeps the false positives of all its layers together near 1 % however many it grows', () => {
    // 10k, 20k, 40k, 80k, 160k: five layers, 1.0 % together (small layers fall short of their
    // targets: ~0.25 % for the first). At 1 % each they gave 4.3 %, halving from 1 % 2.2 %.
    const filter = new KeyFilter(10_000)
    for (let i = 0; i < 300_000; i++) filter.add('app', `stored-${i}`)
    let falsePositives = 0
    const probes = 200_000
    for (let i = 0; i < probes; i++) if (filter.mightContain('app', `never-${i}`)) falsePositives++
    const share = falsePositives / probes
    expect(share).toBeGreaterThan(0.002)
    expect(share).toBeLessThan(0.015)
  })

  it('hashes keys beforehand (keyHashes, on the CPU pool) as it hashes them itself', () => {
    const apps = ['app', 'app', 'é-app', 'app']
    const uuids = ['u-1', 'u-2', 'u-1', `🎉${'x'.repeat(200)}`]
    const hashes = keyHashes(apps, uuids)
    expect(hashes).toHaveLength(8)
    expect([hashes[0], hashes[1]]).toEqual([
      murmurHash3x86(Buffer.from('app\nu-1')),
      xxHash32(Buffer.from('app\nu-1')),
    ])
    const filter = new KeyFilter()
    // Added by string, found by hash; added by hash, found by string.
    filter.add(apps[0]!, uuids[0]!)
    expect(filter.addIfAbsentHashed(hashes[0]!, hashes[1]!)).toBe(false)
    for (let i = 1; i < apps.length; i++)
      expect(filter.addIfAbsentHashed(hashes[2 * i]!, hashes[2 * i + 1]!)).toBe(true)
    for (let i = 0; i < apps.length; i++) expect(filter.mightContain(apps[i]!, uuids[i]!)).toBe(true)
    expect(filter.addIfAbsent('app', 'u-3')).toBe(true)
    expect(filter.addIfAbsent('app', 'u-3')).toBe(false)
    expect(filter.size).toBe(5)
  })
})
