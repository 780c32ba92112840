/** Percentiles, rates and per-second series: the pure arithmetic of the bench. */

/**
 * Nearest-rank percentile of unsorted values: the smallest value such that at least p % of the
 * values are at or below it. Undefined for no values. p in [0, 100].
 */
export function percentile(values: readonly number[], p: number): number | undefined {
  if (values.length === 0) return undefined
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile ${p} is outside [0, 100]`)
  const sorted = [...values].sort((a, b) => a - b)
  return percentileSorted(sorted, p)
}

export function percentileSorted(sorted: readonly number[], p: number): number | undefined {
  if (sorted.length === 0) return undefined
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length))
  return sorted[Math.min(sorted.length, rank) - 1]
}

export interface LatencySummary {
  count: number
  min?: number
  p50?: number
  p90?: number
  p99?: number
  max?: number
  mean?: number
}

export function summarize(values: readonly number[]): LatencySummary {
  if (values.length === 0) return { count: 0 }
  const sorted = [...values].sort((a, b) => a - b)
  let sum = 0
  for (const v of sorted) sum += v
  return {
    count: sorted.length,
    min: sorted[0],
    p50: percentileSorted(sorted, 50),
    p90: percentileSorted(sorted, 90),
    p99: percentileSorted(sorted, 99),
    max: sorted[sorted.length - 1],
    mean: sum / sorted.length,
  }
}

/** Rate of `amount` over `ms` milliseconds, per second (0 for an empty interval). */
export function perSecond(amount: number, ms: number): number {
  return ms > 0 ? (amount * 1000) / ms : 0
}

/**
 * Counters bucketed per interval since a start time: what the "rate over time" charts draw.
 * `add('events', 250)` counts into the current bucket.
 */
export class Timeline {
  readonly start: number
  readonly bucketMs: number
  private readonly buckets = new Map<string, number[]>()

  constructor(start = performance.now(), bucketMs = 1000) {
    this.start = start
    this.bucketMs = bucketMs
  }

  add(series: string, amount = 1, at = performance.now()): void {
    const index = Math.max(0, Math.floor((at - this.start) / this.bucketMs))
    let values = this.buckets.get(series)
    if (!values) this.buckets.set(series, (values = []))
    while (values.length <= index) values.push(0)
    values[index] = (values[index] ?? 0) + amount
  }

  /** Per-second rates of a series, one point per bucket: [seconds since start, rate]. */
  rates(series: string, upTo?: number): [number, number][] {
    const values = this.buckets.get(series) ?? []
    const n = upTo === undefined ? values.length : Math.max(values.length, upTo)
    const out: [number, number][] = []
    for (let i = 0; i < n; i++)
      out.push([((i + 1) * this.bucketMs) / 1000, perSecond(values[i] ?? 0, this.bucketMs)])
    return out
  }

  series(): string[] {
    return [...this.buckets.keys()]
  }
}

/** Rates between consecutive samples of a growing counter: [[t, value], ...] → [[t, rate], ...]. */
export function ratesOfCounter(samples: readonly (readonly [number, number])[]): [number, number][] {
  const out: [number, number][] = []
  for (let i = 1; i < samples.length; i++) {
    const [t0, v0] = samples[i - 1]!
    const [t1, v1] = samples[i]!
    if (t1 > t0) out.push([t1, Math.max(0, (v1 - v0) / (t1 - t0))])
  }
  return out
}

export const round = (value: number, digits = 0): number => {
  const f = 10 ** digits
  return Math.round(value * f) / f
}

/**
 * A growing counter's value at time `t`, interpolated linearly between its samples ([t, value],
 * in time order); before the first sample, 0 at time 0 is assumed, after the last, the last value.
 */
export function counterAt(samples: readonly (readonly [number, number])[], t: number): number {
  let previous: readonly [number, number] = [0, 0]
  for (const sample of samples) {
    if (sample[0] >= t) {
      const [t0, v0] = previous
      const [t1, v1] = sample
      return t1 > t0 ? v0 + ((v1 - v0) * (t - t0)) / (t1 - t0) : v1
    }
    previous = sample
  }
  return previous[1]
}

/** A counter's average rate per second between two times (0 for an empty interval). */
export function counterRate(
  samples: readonly (readonly [number, number])[],
  from: number,
  to: number,
): number {
  return to > from ? (counterAt(samples, to) - counterAt(samples, from)) / (to - from) : 0
}
