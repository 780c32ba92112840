import { describe, expect, it } from 'vitest'
import {
  breakDown,
  STAGES,
  stageDurations,
  stagesLine,
  tailStage,
  type StageStamps,
} from '../../bench/freshness-stages.ts'
import { stageTable } from '../../bench/scenarios/freshness-report.ts'

/** A sample from its stages' lengths, starting at `at`. */
function sample(
  at: number,
  ms: { log: number; parse: number; group: number; write: number; batch: number; receipt: number },
): StageStamps {
  const consumed = at + ms.log
  const parsed = consumed + ms.parse
  const processed = parsed + ms.group
  const written = processed + ms.write
  const recorded = written + ms.batch
  return { accepted: at, consumed, parsed, processed, written, recorded, seen: recorded + ms.receipt }
}

describe('freshness by stage', () => {
  it('splits a sample at the receipt row moments, the stages adding up to its freshness', () => {
    const s: StageStamps = {
      accepted: 1_000,
      consumed: 1_120,
      parsed: 1_135,
      processed: 1_150,
      written: 1_400,
      recorded: 1_460,
      seen: 1_500,
    }
    const d = stageDurations(s)
    expect(d).toEqual({ log: 120, parse: 15, group: 15, write: 250, batch: 60, receipt: 40 })
    expect(STAGES.reduce((sum, st) => sum + d[st], 0)).toBe(s.seen - s.accepted)
  })

  it('keeps a stage that starts before the 202 reached the bench negative, so the sum still holds', () => {
    const d = stageDurations({
      accepted: 1_000,
      consumed: 998,
      parsed: 1_010,
      processed: 1_020,
      written: 1_100,
      recorded: 1_110,
      seen: 1_130,
    })
    expect(d.log).toBe(-2)
    expect(STAGES.reduce((sum, st) => sum + d[st], 0)).toBe(130)
  })

  it('summarises each stage and finds the stage that grows in the slowest tenth', () => {
    // 90 ordinary samples, and 10 whose write stalls (a dedupe look-up behind an insert, say).
    const ordinary = { log: 100, parse: 10, group: 20, write: 200, batch: 30, receipt: 40 }
    const samples: StageStamps[] = []
    for (let i = 0; i < 90; i++) samples.push(sample(i * 10, { ...ordinary, log: 100 + (i % 10) }))
    for (let i = 0; i < 10; i++) samples.push(sample(5_000 + i * 10, { ...ordinary, write: 900 + i }))
    const b = breakDown(samples)
    expect(b.samples).toBe(100)
    expect(b.totalMs.count).toBe(100)
    expect(b.totalMs.max).toBe(100 + 10 + 20 + 909 + 30 + 40)
    // Nearest rank: p50 of the writes is an ordinary one, p99 a stalled one.
    expect(b.stages.write.p50).toBe(200)
    expect(b.stages.write.p90).toBe(200)
    expect(b.stages.write.p99).toBe(908)
    expect(b.stages.log.p50).toBe(104)
    expect(b.stages.log.max).toBe(109)
    expect(b.meanMs.write).toBeCloseTo((90 * 200 + 10 * 904.5) / 100, 6)
    // The slowest 10 % are exactly the stalled writes.
    expect(b.tailMeanMs.write).toBeCloseTo(904.5, 6)
    expect(b.tailMeanMs.log).toBe(100)
    expect(tailStage(b)).toBe('write (270 → 905 ms)')
    expect(b.slowest.map((x) => x.stages.write)).toEqual([909, 908, 907, 906, 905])
    expect(b.slowest[0]!.totalMs).toBe(1_109)
    expect(stagesLine(b)).toBe(
      'p50/p99 ms by stage: log 104/109, parse 10/10, group 20/20, write 200/908, batch 30/30, receipt 40/40; the slowest 10 % spend most more in write (270 → 905 ms)',
    )
  })

  it('takes the single slowest sample as the tail of a handful', () => {
    const b = breakDown([
      sample(0, { log: 10, parse: 1, group: 1, write: 50, batch: 1, receipt: 5 }),
      sample(0, { log: 400, parse: 1, group: 1, write: 50, batch: 1, receipt: 5 }),
    ])
    expect(b.tailMeanMs.log).toBe(400)
    expect(b.meanMs.log).toBe(205)
    expect(tailStage(b)).toBe('log (205 → 400 ms)')
  })

  it('prints a Markdown table of the stages with the slowest samples', () => {
    const b = breakDown([
      sample(0, { log: 10, parse: 2, group: 3, write: 50, batch: 4, receipt: 5 }),
      sample(0, { log: 20, parse: 2, group: 3, write: 1500, batch: 4, receipt: 5 }),
    ])
    const table = stageTable(b)
    expect(table[0]).toBe('Freshness by stage (2 samples; ms):')
    expect(table).toContain(
      "| attributed → written: attribution, the event store's turn, the dedupe look-up, the insert | 50 | 1,500 | 1,500 | 1,500 | 775 | 1,500 |",
    )
    expect(table).toContain('| 202 → seen done (all) | 74 | 1,534 | 1,534 | 1,534 | 804 | |')
    expect(table.at(-1)).toBe(
      'The slowest: 1,534 ms (log 20, parse 2, group 3, write 1,500, batch 4, receipt 5); 74 ms (log 10, parse 2, group 3, write 50, batch 4, receipt 5).',
    )
  })
})
