import { describe, expect, it } from 'vitest'
import { keyHashes } from '../../pipelines/events/key-filter.ts'
import { RecentKeys } from '../../pipelines/events/recent-keys.ts'

/** How many of keys u-from..u-to `recent` still holds, each with its own transaction tx-i. */
function heldOf(recent: RecentKeys, from: number, to: number): number {
  let held = 0
  for (let i = from; i < to; i++) {
    const tx = recent.get('app', `u-${i}`)
    if (tx !== undefined) {
      expect(tx).toBe(`tx-${i}`)
      held++
    }
  }
  return held
}

describe('the keys stored recently', () => {
  it('answers with the transaction that stored a key, and nothing for keys it never held', () => {
    const recent = new RecentKeys(1000)
    for (let i = 0; i < 500; i++) recent.add('app', `u-${i}`, `tx-${i % 7}`)
    for (let i = 0; i < 500; i++) expect(recent.get('app', `u-${i}`)).toBe(`tx-${i % 7}`)
    // Another app's uuid, another uuid in the app: not held.
    expect(recent.get('other', 'u-1')).toBeUndefined()
    expect(recent.get('app', 'u-500')).toBeUndefined()
  })

  it('finds a key by the hash the CPU pool computed as by the one it computes itself', () => {
    const recent = new RecentKeys(100)
    const uuids = ['a', 'é-b', `🎉${'x'.repeat(80)}`]
    const hashes = keyHashes(
      uuids.map(() => 'app'),
      uuids,
    )
    uuids.forEach((u, i) => recent.add('app', u, `tx-${i}`, hashes[2 * i]))
    expect(uuids.map((u) => recent.get('app', u))).toEqual(['tx-0', 'tx-1', 'tx-2'])
    expect(uuids.map((u, i) => recent.get('app', u, hashes[2 * i]))).toEqual(['tx-0', 'tx-1', 'tx-2'])
  })

  it('forgets the oldest keys past its capacity, and never answers for a key it did not hold', () => {
    const recent = new RecentKeys(1000)
    for (let i = 0; i < 5000; i++) recent.add('app', `u-${i}`, `tx-${i}`)
    // The ring holds the last 1,000; a full probe range may have pushed out a few of them early.
    expect(heldOf(recent, 4000, 5000)).toBeGreaterThan(990)
    for (let i = 0; i < 4000; i++) expect(recent.get('app', `u-${i}`)).toBeUndefined()
  })

  it('tells keys apart when their hashes collide', () => {
    const recent = new RecentKeys(16)
    // The same hash given for every key: each lands in the same probe range and is told apart by
    // its strings; past the range, the oldest is forgotten.
    for (let i = 0; i < 8; i++) recent.add('app', `u-${i}`, `tx-${i}`, 42)
    for (let i = 0; i < 8; i++) expect(recent.get('app', `u-${i}`, 42)).toBe(`tx-${i}`)
    expect(recent.get('app', 'u-8', 42)).toBeUndefined()
    recent.add('app', 'u-8', 'tx-8', 42)
    expect(recent.get('app', 'u-8', 42)).toBe('tx-8')
    expect(recent.get('app', 'u-0', 42)).toBeUndefined()
    expect(recent.get('app', 'u-1', 42)).toBe('tx-1')
  })

  it('forgets every key at once, and holds keys added after that as before', () => {
    const recent = new RecentKeys(100)
    for (let i = 0; i < 50; i++) recent.add('app', `u-${i}`, `tx-${i}`)
    recent.forget()
    for (let i = 0; i < 50; i++) expect(recent.get('app', `u-${i}`)).toBeUndefined()
    for (let i = 50; i < 150; i++) recent.add('app', `u-${i}`, `tx-${i}`)
    expect(heldOf(recent, 50, 150)).toBeGreaterThan(95)
    for (let i = 0; i < 50; i++) expect(recent.get('app', `u-${i}`)).toBeUndefined()
  })
})
