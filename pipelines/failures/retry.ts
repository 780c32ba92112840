/**
 * The one retry helper of Sluice: bounded by attempts and by a deadline, with exponential backoff
 * and full jitter (each wait is uniform in [0, cap], cap doubling per retry), so workers that fail
 * together do not retry in step. Time, sleep and randomness are injected, so tests never sleep.
 */

export interface RetryPolicy {
  /** Attempts in all, the first included (at least 1). */
  attempts: number
  /** No attempt starts later than this after the first one; a wait that would cross it is not made. */
  deadlineMs: number
  /** Cap of the first wait; it doubles per retry, up to maxDelayMs. */
  baseDelayMs: number
  maxDelayMs: number
}

export interface RetryClock {
  now(): number
  sleep(ms: number): Promise<void>
  /** Uniform in [0, 1). */
  random(): number
}

export const realClock: RetryClock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  random: () => Math.random(),
}

export type RetryResult<T> =
  | { ok: true; value: T; attempts: number }
  | {
      ok: false
      error: unknown
      attempts: number
      /** Why it stopped: out of attempts, out of time, or the error said retrying cannot help. */
      stoppedBy: 'attempts' | 'deadline' | 'give-up'
    }

export interface RetryOptions {
  clock?: RetryClock
  /** False: stop at once (e.g. a permanent error). Default: retry every error. */
  shouldRetry?: (error: unknown, attempt: number) => boolean
  /** Called before each wait, with the attempt that failed and the wait chosen. */
  onRetry?: (error: unknown, attempt: number, delayMs: number) => void
}

/** The wait before retry number `retry` (1 = after the first failure): uniform in [0, cap). */
export function backoffDelay(retry: number, policy: RetryPolicy, random: () => number): number {
  const cap = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.min(retry - 1, 30))
  return Math.floor(random() * cap)
}

/** Runs `fn` until it resolves or the policy runs out; never throws what `fn` threw, returns it. */
export async function retry<T>(
  fn: (attempt: number) => Promise<T>,
  policy: RetryPolicy,
  options: RetryOptions = {},
): Promise<RetryResult<T>> {
  const clock = options.clock ?? realClock
  const deadline = clock.now() + Math.max(0, policy.deadlineMs)
  const attempts = Math.max(1, Math.floor(policy.attempts))
  for (let attempt = 1; ; attempt++) {
    try {
      return { ok: true, value: await fn(attempt), attempts: attempt }
    } catch (error) {
      if (options.shouldRetry && !options.shouldRetry(error, attempt)) {
        return { ok: false, error, attempts: attempt, stoppedBy: 'give-up' }
      }
      if (attempt >= attempts) return { ok: false, error, attempts: attempt, stoppedBy: 'attempts' }
      const delay = backoffDelay(attempt, policy, () => clock.random())
      if (clock.now() + delay >= deadline) {
        return { ok: false, error, attempts: attempt, stoppedBy: 'deadline' }
      }
      options.onRetry?.(error, attempt, delay)
      await clock.sleep(delay)
    }
  }
}
