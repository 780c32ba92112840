import { describe, expect, it } from 'vitest'
import { combineBareResults, type BareResult } from '../../bench/baselines/run.ts'

function part(
  requests: number,
  bytes: number,
  elapsedMs: number,
  events: number,
  cpuSeconds?: number,
): BareResult {
  return {
    kind: 'plain',
    server: 'floor',
    requests,
    bytes,
    elapsedMs,
    bytesPerSecond: (bytes * 1000) / elapsedMs,
    requestsPerSecond: (requests * 1000) / elapsedMs,
    eventsPerSecond: (events * 1000) / elapsedMs,
    errors: 1,
    latencyMs: { count: requests },
    ...(cpuSeconds === undefined ? {} : { cpuSeconds }),
  }
}

describe('a floor measured in halves', () => {
  it('is reported as one measurement over both halves: sums, rates over the summed time, all latencies', () => {
    const r = combineBareResults(
      [part(100, 1_000_000, 1_000, 2_500, 0.4), part(300, 2_000_000, 1_500, 7_500, 0.6)],
      [5, 1, 3, 2, 4],
    )
    expect(r).toMatchObject({
      kind: 'plain',
      server: 'floor',
      requests: 400,
      bytes: 3_000_000,
      elapsedMs: 2_500,
      errors: 2,
    })
    expect(r.cpuSeconds).toBeCloseTo(1.0, 10)
    // Rates of the whole: not the mean of the two halves' rates (1,000,000 and 1,333,333 B/s).
    expect(r.bytesPerSecond).toBeCloseTo(1_200_000, 6)
    expect(r.requestsPerSecond).toBeCloseTo(160, 6)
    expect(r.eventsPerSecond).toBeCloseTo(4_000, 6)
    expect(r.latencyMs).toMatchObject({ count: 5, min: 1, max: 5, p50: 3, mean: 3 })
  })

  it('has no CPU figure unless both halves have one, and needs a half', () => {
    expect(combineBareResults([part(1, 10, 10, 1, 0.1), part(1, 10, 10, 1)], []).cpuSeconds).toBeUndefined()
    expect(() => combineBareResults([], [])).toThrow(RangeError)
  })
})
