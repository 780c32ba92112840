import { getHeapStatistics } from 'node:v8'
import { afterEach, describe, expect, it, vi } from 'vitest'
import {
  COLLECT_MARGIN_BYTES,
  concurrentCollector,
  ENGAGED_GROWING_PERCENT,
  MIN_COLLECT_INTERVAL_MS,
  governorEngaged,
  RELEASE_MARGIN_BYTES,
  setHeapGrowingPercent,
  shouldCollect,
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

describe('shouldCollect', () => {
  it('asks for a collection only well over the soft limit, and not again too soon', () => {
    const limit = 850 * MB
    const over = limit + COLLECT_MARGIN_BYTES + 1
    expect(shouldCollect(limit + COLLECT_MARGIN_BYTES, limit, Infinity)).toBe(false)
    expect(shouldCollect(over, limit, Infinity)).toBe(true)
    expect(shouldCollect(over, limit, MIN_COLLECT_INTERVAL_MS - 1)).toBe(false)
    expect(shouldCollect(over, limit, MIN_COLLECT_INTERVAL_MS)).toBe(true)
  })
})

describe('the governor asking for collections', () => {
  afterEach(() => vi.useRealTimers())

  it('collects when RSS is far over the limit, at most once per interval', () => {
    vi.useFakeTimers()
    const far = (850 * MB + COLLECT_MARGIN_BYTES) / MB + 10
    // Sampled every 500 ms: far over (collect), far over 500 ms later (too soon), under, far over
    // 2 s after the first (collect again).
    const rss = [far, far, 870, far, far].map((mb) => mb * MB)
    const collected: number[] = []
    const governor = startMemoryGovernor({
      softLimitBytes: 850 * MB,
      intervalMs: 500,
      readRss: () => rss.shift() ?? 100 * MB,
      setGrowingPercent: () => undefined,
      collect: () => {
        collected.push(Date.now())
        return Promise.resolve()
      },
      onChange: () => undefined,
    })
    const start = Date.now()
    vi.advanceTimersByTime(2500)
    governor.stop()
    expect(collected.map((t) => t - start)).toEqual([500, 2500])
  })
})

describe('concurrentCollector', () => {
  it("gives a function that runs a full collection of this thread's heap", async () => {
    const collect = concurrentCollector()
    expect(collect).toBeTypeOf('function')
    // Old-generation garbage: objects kept past two scavenges, then dropped.
    let kept: object[] | undefined = Array.from({ length: 400_000 }, (_, i) => ({ i, s: `v${i}` }))
    for (let i = 0; i < 3; i++) Array.from({ length: 200_000 }, (_, j) => [j])
    const withGarbage = getHeapStatistics().used_heap_size
    expect(kept.length).toBe(400_000)
    kept = undefined
    await collect!()
    const after = getHeapStatistics().used_heap_size
    // 400,000 objects of ~70 bytes with their strings: well over 10 MB freed.
    expect(withGarbage - after).toBeGreaterThan(10 * MB)
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
