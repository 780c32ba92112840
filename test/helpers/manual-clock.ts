import type { Clock } from '../../pipelines/clock.ts'

export interface ManualClock extends Clock {
  advance(ms: number): void
  /** Every sleep asked for, in order. */
  readonly slept: number[]
}

/**
 * A clock that moves only when told: `advance`, or a `sleep`, which returns at once having moved
 * the time on. `onSleep` runs after each sleep, so a test can change the world "meanwhile".
 */
export function manualClock(start = 1_700_000_000_000, onSleep?: (now: number) => void): ManualClock {
  let now = start
  const slept: number[] = []
  return {
    now: () => now,
    advance(ms) {
      now += ms
    },
    async sleep(ms) {
      slept.push(ms)
      now += ms
      onSleep?.(now)
    },
    slept,
  }
}
