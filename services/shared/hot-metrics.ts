import { Counter, type CounterConfiguration, type Registry } from 'prom-client'

/**
 * Metrics updated on a path taken thousands of times a second (every upload). A prom-client child
 * (`labels(...)`) hashes its label object into a string, validates it and, for a histogram, turns
 * the bucket bound into a property name on every update: ~1-2 µs and ~600 B of garbage per upload
 * for the edge's two request metrics and its produced-records counter. Here a label set is
 * resolved once, when its child is made, and an update is a few additions; what Prometheus reads
 * is the same text (test/unit/hot-metrics.test.ts compares it with prom-client's own).
 */

/** One label set's histogram: counts per bucket (not cumulative), their sum and count. */
export class HistogramChild {
  private readonly counts: Float64Array
  sum = 0
  count = 0

  constructor(
    readonly labels: Readonly<Record<string, string>>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length)
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`)
    const bounds = this.bounds
    for (let i = 0; i < bounds.length; i++)
      if (value <= bounds[i]!) {
        this.counts[i]!++
        break
      }
    this.sum += value
    this.count++
  }

  /** Observations at or below each bound, in bound order (Prometheus's cumulative buckets). */
  cumulative(): number[] {
    let total = 0
    return Array.from(this.counts, (n) => (total += n))
  }

  reset(): void {
    this.counts.fill(0)
    this.sum = 0
    this.count = 0
  }
}

export interface HotHistogramConfiguration {
  name: string
  help: string
  labelNames: readonly string[]
  buckets: readonly number[]
  registers: Registry[]
}

/** A histogram read by prom-client's Registry as its own Histogram is (get(), reset()). */
export class HotHistogram {
  readonly name: string
  readonly help: string
  readonly type = 'histogram'
  readonly aggregator = 'sum'
  private readonly labelNames: readonly string[]
  private readonly bounds: readonly number[]
  private readonly children = new Map<string, HistogramChild>()

  constructor(config: HotHistogramConfiguration) {
    this.name = config.name
    this.help = config.help
    this.labelNames = config.labelNames
    this.bounds = [...config.buckets].sort((a, b) => a - b)
    for (const registry of config.registers) registry.registerMetric(this as never)
  }

  /** The child of one label set (the same object for the same labels): keep it, and observe on it. */
  child(labels: Readonly<Record<string, string>>): HistogramChild {
    for (const name of Object.keys(labels))
      if (!this.labelNames.includes(name))
        throw new Error(
          `Added label "${name}" is not included in initial labelset: ${this.labelNames.join(',')}`,
        )
    const id = this.labelNames.map((name) => labels[name] ?? '').join('\u0000')
    let child = this.children.get(id)
    if (!child) this.children.set(id, (child = new HistogramChild({ ...labels }, this.bounds)))
    return child
  }

  get() {
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = []
    const bucket = `${this.name}_bucket`
    for (const child of this.children.values()) {
      const cumulative = child.cumulative()
      this.bounds.forEach((le, i) =>
        values.push({ labels: { le, ...child.labels }, value: cumulative[i]!, metricName: bucket }),
      )
      values.push(
        { labels: { le: '+Inf', ...child.labels }, value: child.count, metricName: bucket },
        { labels: { ...child.labels }, value: child.sum, metricName: `${this.name}_sum` },
        { labels: { ...child.labels }, value: child.count, metricName: `${this.name}_count` },
      )
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator }
  }

  /** Zeroes every label set (children handed out stay valid, unlike prom-client's reset). */
  reset(): void {
    for (const child of this.children.values()) child.reset()
  }
}

/** A counter child that counts in a field; its counter folds the count in when it is read. */
export interface CounterChild {
  inc(): void
}

/**
 * prom-client's Counter, plus `child(labels)`: children whose inc() adds to a field, folded into
 * the counter (one `inc(labels, n)` per label set) by its collect hook, which prom-client runs
 * before every read of the counter.
 */
export function hotCounter<T extends string>(
  config: Omit<CounterConfiguration<T>, 'collect'>,
): Counter<T> & { child(labels: Partial<Record<T, string>>): CounterChild } {
  const pending: { labels: Partial<Record<T, string>>; count: number }[] = []
  const counter = new Counter<T>({
    ...config,
    collect() {
      for (const entry of pending)
        if (entry.count > 0) {
          counter.inc(entry.labels, entry.count)
          entry.count = 0
        }
    },
  })
  const children = new Map<string, CounterChild>()
  return Object.assign(counter, {
    child(labels: Partial<Record<T, string>>): CounterChild {
      // prom-client's own check of the label names, once per label set.
      counter.inc(labels, 0)
      const id = (config.labelNames ?? []).map((name) => labels[name] ?? '').join('\u0000')
      let child = children.get(id)
      if (!child) {
        const entry = { labels: { ...labels }, count: 0 }
        pending.push(entry)
        children.set(id, (child = { inc: () => void entry.count++ }))
      }
      return child
    },
  })
}
