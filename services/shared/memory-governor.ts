import { setFlagsFromString } from 'node:v8'

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
  onChange: (engaged: boolean, rssBytes: number) => void
}

export interface MemoryGovernor {
  readonly engaged: boolean
  stop(): void
}

/** Samples RSS every `intervalMs` and holds V8's heaps tight while it is over the soft limit. */
export function startMemoryGovernor(options: MemoryGovernorOptions): MemoryGovernor {
  let engaged = false
  const timer = setInterval(() => {
    const rss = options.readRss()
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
