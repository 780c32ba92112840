import { describe, expect, it } from 'vitest'
import { longestStall, type GroupSample } from '../helpers/group-progress.ts'

const sample = (at: number, committed: number[], ends: number[], busy = false): GroupSample => ({
  at,
  committed,
  ends,
  busy,
})

describe('longestStall: how long a consumer group sat idle with records waiting', () => {
  it('measures from the last commit to the next one while records wait', () => {
    const stall = longestStall([
      sample(0, [0, 0], [5, 5]),
      sample(1000, [2, 0], [5, 5]),
      sample(2000, [2, 0], [6, 5]),
      sample(7500, [2, 0], [6, 5]),
      sample(8000, [2, 3], [6, 5]),
    ])
    expect(stall).toEqual({ ms: 7000, from: 1000, to: 8000 })
  })

  it('does not count time with nothing to do, and starts counting when work appears', () => {
    const stall = longestStall([
      sample(0, [4], [4]),
      sample(5000, [4], [4]),
      sample(6000, [4], [6]),
      sample(9000, [6], [6]),
    ])
    expect(stall).toEqual({ ms: 3000, from: 6000, to: 9000 })
  })

  it('counts one partition held while the others commit as progress', () => {
    const stall = longestStall([
      sample(0, [0, 0], [9, 9]),
      sample(1000, [0, 1], [9, 9]),
      sample(2000, [0, 2], [9, 9]),
      sample(3000, [0, 3], [9, 9]),
    ])
    expect(stall.ms).toBe(1000)
  })

  it('counts a batch in hand as work, however long it takes', () => {
    const stall = longestStall([
      sample(0, [0], [9]),
      sample(500, [0], [9], true),
      sample(20_000, [0], [9], true),
      sample(20_500, [4], [9]),
      sample(21_000, [9], [9]),
    ])
    expect(stall.ms).toBe(500)
  })
})
