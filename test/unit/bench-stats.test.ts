import { describe, expect, it } from 'vitest'
import {
  counterAt,
  counterRate,
  percentile,
  perSecond,
  ratesOfCounter,
  summarize,
  Timeline,
} from '../../bench/stats.ts'

import { countStatus, type StatusCounts } from '../../bench/scenarios/context.ts'
describe('bench stats', () => {
  const hundred = Array.from({ length: 100 }, (_, i) => 100 - i) // 100..1, unsorted

  it('computes nearest-rank percentiles', () => {
    expect(percentile(hundred, 50)).toBe(50)
    expect(percentile(hundred, 99)).toBe(99)
    expect(percentile(hundred, 100)).toBe(100)
    expect(percentile(hundred, 0)).toBe(1)
    expect(percentile(hundred, 99.5)).toBe(100)
    expect(percentile([7], 99)).toBe(7)
    expect(percentile([3, 1, 2], 50)).toBe(2)
    expect(percentile([1, 2, 3, 4], 50)).toBe(2)
    expect(percentile([1, 2, 3, 4], 75)).toBe(3)
    expect(percentile([], 50)).toBeUndefined()
    expect(() => percentile([1], 101)).toThrow(RangeError)
  })

  it('does not reorder the input', () => {
    const values = [3, 1, 2]
    percentile(values, 50)
    expect(values).toEqual([3, 1, 2])
  })

  it('summarizes latencies', () => {
    expect(summarize(hundred)).toEqual({
      count: 100,
      min: 1,
      p50: 50,
      p90: 90,
      p99: 99,
      max: 100,
      mean: 50.5,
    })
    expect(summarize([])).toEqual({ count: 0 })
  })

  it('computes rates per second, per bucket and between counter samples', () => {
    expect(perSecond(500, 250)).toBe(2000)
    expect(perSecond(5, 0)).toBe(0)
    const t = new Timeline(0, 1000)
    t.add('events', 100, 10)
    t.add('events', 50, 999)
    t.add('events', 30, 2500)
    expect(t.rates('events')).toEqual([
      [1, 150],
      [2, 0],
      [3, 30],
    ])
    expect(t.rates('missing')).toEqual([])
    expect(
      ratesOfCounter([
        [0, 0],
        [0.5, 1000],
        [1.5, 1000],
        [2, 3000],
      ]),
    ).toEqual([
      [0.5, 2000],
      [1.5, 0],
      [2, 4000],
    ])
  })
})

describe('counter rates', () => {
  const samples: [number, number][] = [
    [1, 100],
    [2, 300],
    [4, 300],
    [5, 1300],
  ]
  it('interpolates between samples and holds the last value after them', () => {
    expect(counterAt(samples, 0)).toBe(0)
    expect(counterAt(samples, 0.5)).toBe(50)
    expect(counterAt(samples, 1.5)).toBe(200)
    expect(counterAt(samples, 3)).toBe(300)
    expect(counterAt(samples, 4.5)).toBe(800)
    expect(counterAt(samples, 9)).toBe(1300)
  })
  it('gives the average rate over a window', () => {
    expect(counterRate(samples, 0, 2)).toBe(150)
    expect(counterRate(samples, 4, 5)).toBe(1000)
    expect(counterRate(samples, 3, 3)).toBe(0)
  })
})

describe('answers counted by status', () => {
  it('counts codes, and keeps why a socket failed', () => {
    const counts: StatusCounts = {}
    countStatus(counts, { status: 202 })
    countStatus(counts, { status: 202 })
    countStatus(counts, { status: 'error', error: 'socket hang up' })
    countStatus(counts, { status: 'error', error: 'socket hang up' })
    countStatus(counts, { status: 'error' })
    expect(counts).toEqual({ '202': 2, 'error: socket hang up': 2, 'error: unknown': 1 })
  })
})
