import { getHeapStatistics } from 'node:v8'
import { afterEach, describe, expect, it, vi } from 'vitest'
import {
  ENGAGED_GROWING_PERCENT,
  governorEngaged,
  RELEASE_MARGIN_BYTES,
  setHeapGrowingPercent,
  startMemoryGovernor,
} from '../../services/shared/memory-governor.ts'

const MB = 1024 * 1024

describe('governorEngaged', () => {
  it('engages over the soft limit and lets go only a margin under it', () => {
    const limit = 850 * MB
    expect(governorEngaged(false, limit, limit)).toBe(false)
    expect(governorEngaged(false, limit + 1, limit)).toBe(true)
    // Engaged: stays so between the limit and the margin under it (no flapping at the line).
    expect(governorEngaged(true, limit - 1, limit)).toBe(true)
    expect(governorEngaged(true, limit - RELEASE_MARGIN_BYTES + 1, limit)).toBe(true)
    expect(governorEngaged(true, limit - RELEASE_MARGIN_BYTES, limit)).toBe(false)
  })
})

describe('startMemoryGovernor', () => {
  afterEach(() => vi.useRealTimers())

  it('tightens V8 while RSS is over the limit, loosens it after, and on stop', () => {
    vi.useFakeTimers()
    const rss = [100, 900, 860, 800, 780, 900].map((mb) => mb * MB)
    const percents: number[] = []
    const changes: [boolean, number][] = []
    const governor = startMemoryGovernor({
      softLimitBytes: 850 * MB,
      intervalMs: 1000,
      readRss: () => rss.shift()!,
      setGrowingPercent: (p) => percents.push(p),
      onChange: (engaged, bytes) => changes.push([engaged, bytes / MB]),
    })
    vi.advanceTimersByTime(1000) // 100: under
    expect(governor.engaged).toBe(false)
    vi.advanceTimersByTime(1000) // 900: over
    expect(governor.engaged).toBe(true)
    vi.advanceTimersByTime(2000) // 860, 800: within the margin
    expect(governor.engaged).toBe(true)
    vi.advanceTimersByTime(1000) // 780: 70 MB under
    expect(governor.engaged).toBe(false)
    vi.advanceTimersByTime(1000) // 900: over again
    governor.stop()
    expect(governor.engaged).toBe(false)
    expect(percents).toEqual([ENGAGED_GROWING_PERCENT, 0, ENGAGED_GROWING_PERCENT, 0])
    expect(changes).toEqual([
      [true, 900],
      [false, 780],
      [true, 900],
    ])
  })
})

describe('setHeapGrowingPercent', () => {
  afterEach(() => setHeapGrowingPercent(0))

  it("sets V8's flag at run time: the old generation grows only that much over what survives", () => {
    // Objects that survive the young generation (a tenth kept for a while), so the old one grows.
    const peakHeap = () => {
      let young: object[] = []
      const kept: object[][] = []
      let peak = 0
      for (let i = 0; i < 1_500_000; i++) {
        young.push({ i, s: `v${i}`, a: [i] })
        if (young.length === 100_000) {
          kept.push(young.slice(0, 10_000))
          if (kept.length > 10) kept.shift()
          young = []
        }
        if (i % 5000 === 0) peak = Math.max(peak, getHeapStatistics().total_heap_size)
      }
      return peak
    }
    setHeapGrowingPercent(10)
    peakHeap()
    const tight = peakHeap()
    setHeapGrowingPercent(0)
    peakHeap()
    const free = peakHeap()
    expect(tight).toBeLessThan(free * 0.85)
  })
})
