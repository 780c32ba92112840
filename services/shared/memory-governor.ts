import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

/**
 * A soft limit on the process's resident memory, in the manner of Go's GOMEMLIMIT: below it V8
 * sizes its old generations as it likes (up to 4x what survived the last full collection, when
 * the program allocates fast); above it, each next limit is only `ENGAGED_GROWING_PERCENT` over
 * what survived, so full collections come sooner and the heaps stay near their live size. The
 * CPU this costs is paid only while the process is over the limit. Measured (docs/memory.md):
 * V8's heap-growing factor fixed at 1.3 for a whole sustained run took its RSS max from ~980 to
 * ~835 MB and its rate down by a fifth; at 1.5, 872 MB and a tenth.
 */

/** Old-generation growth (percent over the live size) while over the soft limit. */
export const ENGAGED_GROWING_PERCENT = 30

/** How far under the soft limit RSS must fall to let V8 grow its heaps freely again. */
export const RELEASE_MARGIN_BYTES = 64 * 1024 * 1024

/**
 * How far over the soft limit RSS may go before the governor asks the main thread's V8 for a full
 * collection now. The tighter growth above only takes effect at V8's next full collection, which
 * comes when the old generation reaches the limit set at the last one, and under load the main
 * heap held 40-70 MB of garbage at the sustained scenario's RSS peaks (old generation 130-145 MB,
 * ~70 MB live in a heap snapshot). Collected concurrently (V8's marking threads), so the event
 * loop pauses only for the collection's last steps. Measured: the sustained scenario's RSS max
 * 992-1,008 MB against 1,009-1,030 without (docs/memory.md).
 */
export const COLLECT_MARGIN_BYTES = 96 * 1024 * 1024

/** At most one asked-for collection per this long: each costs CPU, and one frees what there is. */
export const MIN_COLLECT_INTERVAL_MS = 2000

/** Whether to ask for a collection now, given the RSS, the soft limit and the time since the last. */
export function shouldCollect(rssBytes: number, softLimitBytes: number, sinceLastMs: number): boolean {
  return rssBytes > softLimitBytes + COLLECT_MARGIN_BYTES && sinceLastMs >= MIN_COLLECT_INTERVAL_MS
}

/**
 * A function that starts a full, concurrent collection of this thread's heap, or undefined where
 * V8 will not give one. V8 hands its `gc` function only to contexts created after `--expose-gc`
 * is set, so it is set at run time and the function taken from a new context: no node flag to
 * start the process with.
 */
export function concurrentCollector(): (() => Promise<void>) | undefined {
  try {
    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc') as unknown
    if (typeof gc !== 'function') return undefined
    return () => (gc as (options: object) => Promise<void>)({ type: 'major', execution: 'async' })
  } catch {
    return undefined
  }
}

/** Whether the governor holds V8's heaps tight, given whether it did and the RSS now. */
export function governorEngaged(wasEngaged: boolean, rssBytes: number, softLimitBytes: number): boolean {
  return wasEngaged ? rssBytes > softLimitBytes - RELEASE_MARGIN_BYTES : rssBytes > softLimitBytes
}

/** V8's `--heap-growing-percent`: 0 is V8's own dynamic growth. Process-wide (every isolate). */
export function setHeapGrowingPercent(percent: number): void {
  setFlagsFromString(`--heap-growing-percent=${percent}`)
}

export interface MemoryGovernorOptions {
  softLimitBytes: number
  intervalMs: number
  readRss: () => number
  setGrowingPercent: (percent: number) => void
  /** Starts a full collection of the main thread's heap (concurrentCollector); none if absent. */
  collect?: () => Promise<void>
  onChange: (engaged: boolean, rssBytes: number) => void
}

export interface MemoryGovernor {
  readonly engaged: boolean
  stop(): void
}

/**
 * Samples RSS every `intervalMs`, holds V8's heaps tight while it is over the soft limit, and asks for a
 * collection now (`collect`) when it is `COLLECT_MARGIN_BYTES` over it.
 */
export function startMemoryGovernor(options: MemoryGovernorOptions): MemoryGovernor {
  let engaged = false
  let lastCollect = -Infinity
  const timer = setInterval(() => {
    const rss = options.readRss()
    const now = Date.now()
    if (options.collect && shouldCollect(rss, options.softLimitBytes, now - lastCollect)) {
      lastCollect = now
      options.collect().catch(() => undefined)
    }
    const next = governorEngaged(engaged, rss, options.softLimitBytes)
    if (next === engaged) return
    engaged = next
    options.setGrowingPercent(engaged ? ENGAGED_GROWING_PERCENT : 0)
    options.onChange(engaged, rss)
  }, options.intervalMs)
  timer.unref()
  return {
    get engaged() {
      return engaged
    },
    stop() {
      clearInterval(timer)
      if (engaged) options.setGrowingPercent(0)
      engaged = false
    },
  }
}
