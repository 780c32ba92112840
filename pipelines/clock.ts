/**
 * Time as a dependency: code that expires, refills or waits takes a Clock, so its tests move time
 * by hand instead of sleeping (a test that sleeps is slow, and flaky on a busy machine).
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number
  sleep(ms: number): Promise<void>
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
}
