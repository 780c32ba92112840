import { describe, expect, it } from 'vitest'
import { capAllows, CONTROL, variantOf } from '../../pipelines/campaigns/assign-variant.ts'

const DAY = 86_400_000

describe('variant assignment', () => {
  it('is stable per (campaign, install) and splits by percent, the control group held out first', () => {
    const creatives = [
      { letter: 'A', percent: 70 },
      { letter: 'B', percent: 30 },
    ]
    const counts: Record<string, number> = { A: 0, B: 0, [CONTROL]: 0 }
    for (let i = 0; i < 20_000; i++) counts[variantOf(7, `install-${i}`, 10, creatives)]!++
    expect(counts[CONTROL]! / 20_000).toBeCloseTo(0.1, 1)
    expect(counts.A! / (counts.A! + counts.B!)).toBeCloseTo(0.7, 1)
    expect(variantOf(7, 'install-42', 10, creatives)).toBe(variantOf(7, 'install-42', 10, creatives))
    // Another campaign draws afresh.
    const same = Array.from(
      { length: 200 },
      (_, i) => variantOf(7, `i${i}`, 50, creatives) === variantOf(8, `i${i}`, 50, creatives),
    )
    expect(same.filter(Boolean).length).toBeLessThan(180)
    expect(variantOf(7, 'x', 100, creatives)).toBe(CONTROL)
    expect(variantOf(7, 'x', 0, [{ letter: 'A', percent: 100 }])).toBe('A')
  })

  it('applies frequency caps: count per days, and days apart', () => {
    const at = 100 * DAY
    const caps = [{ name: 'messages_per_days' as const, days: 7, count: 2 }]
    expect(capAllows(caps, [], at)).toBe(true)
    expect(capAllows(caps, [at - DAY], at)).toBe(true)
    expect(capAllows(caps, [at - DAY, at - 2 * DAY], at)).toBe(false)
    expect(capAllows(caps, [at - 8 * DAY, at - 9 * DAY], at)).toBe(true)
    const apart = [
      { name: 'messages_per_days' as const, days: 30, count: 10, messages_atleast_days_apart: 3 },
    ]
    expect(capAllows(apart, [at - 2 * DAY], at)).toBe(false)
    expect(capAllows(apart, [at - 3 * DAY], at)).toBe(true)
    expect(capAllows(undefined, [at], at)).toBe(true)
  })
})
