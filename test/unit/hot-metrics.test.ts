import { Counter, Histogram, Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { hotCounter, HotHistogram } from '../../services/shared/hot-metrics.ts'

const BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]

// Whatever the observations, Prometheus must read from the hot metrics exactly the text it reads
// from prom-client's own Histogram and Counter given the same updates.
describe('hot-path metrics read as prom-client metrics are', () => {
  it('a histogram: the same exposition text, label sets resolved once', async () => {
    const ours = new Registry()
    const theirs = new Registry()
    const hot = new HotHistogram({
      name: 'h_seconds',
      help: 'latency',
      labelNames: ['method', 'route'],
      buckets: BUCKETS,
      registers: [ours],
    })
    const reference = new Histogram({
      name: 'h_seconds',
      help: 'latency',
      labelNames: ['method', 'route'] as const,
      buckets: BUCKETS,
      registers: [theirs],
    })
    const labelSets = [
      { method: 'POST', route: '/v0/uploads' },
      { method: 'GET', route: '/v0/uploads/:transaction_id' },
    ]
    // Values on, between, below and past the bounds.
    const values = [0, 0.001, 0.0011, 0.004, 0.005, 0.3, 1, 2.4999, 5, 5.0001, 17, 0.00003]
    labelSets.forEach((labels, n) => {
      const child = hot.child(labels)
      expect(hot.child({ ...labels })).toBe(child)
      for (const value of values.slice(n)) {
        child.observe(value)
        reference.observe(labels, value)
      }
    })
    const text = await ours.metrics()
    expect(text).toBe(await theirs.metrics())
    expect(text).toContain('h_seconds_bucket{le="0.005",method="POST",route="/v0/uploads"} 6')
    expect(text).toContain('h_seconds_count{method="POST",route="/v0/uploads"} 12')

    hot.reset()
    reference.reset()
    hot.child(labelSets[0]!).observe(0.2)
    reference.observe(labelSets[0]!, 0.2)
    reference.zero(labelSets[1]!)
    expect(await ours.metrics()).toBe(await theirs.metrics())
  })

  it('refuses a label the histogram was not given, as prom-client does', () => {
    const hot = new HotHistogram({ name: 'x', help: 'x', labelNames: ['a'], buckets: [1], registers: [] })
    expect(() => hot.child({ b: '1' })).toThrow(/not included in initial labelset/)
    expect(() => hot.child({ a: '1' }).observe(Number.NaN)).toThrow(/not a valid number/)
  })

  it('a counter: children count in a field, folded in when the counter is read', async () => {
    const ours = new Registry()
    const theirs = new Registry()
    const hot = hotCounter({ name: 'c_total', help: 'c', labelNames: ['topic'] as const, registers: [ours] })
    const reference = new Counter({
      name: 'c_total',
      help: 'c',
      labelNames: ['topic'] as const,
      registers: [theirs],
    })
    const uploads = hot.child({ topic: 'uploads' })
    expect(hot.child({ topic: 'uploads' })).toBe(uploads)
    for (let i = 0; i < 5; i++) uploads.inc()
    hot.child({ topic: 'sdk' }).inc()
    // The prom-client API still works beside the children.
    hot.inc({ topic: 'uploads' }, 2)
    reference.inc({ topic: 'uploads' }, 7)
    reference.inc({ topic: 'sdk' })
    expect(await ours.metrics()).toBe(await theirs.metrics())
    expect(await ours.metrics()).toContain('c_total{topic="uploads"} 7')

    // Counts made after a read are added to it at the next read.
    uploads.inc()
    reference.inc({ topic: 'uploads' })
    expect(await ours.metrics()).toBe(await theirs.metrics())
    expect(() => hot.child({ other: 'x' } as never)).toThrow()
  })
})
