/**
 * glibc's malloc keeps the pages of memory freed in the middle of its heaps: it gives back only
 * what is free at the top of the main heap, so after a burst (gzip uploads inflated, split and
 * written) the heap stays at its high-water mark with most of it free. `malloc_trim(0)` hands
 * every whole free page of every arena back to the kernel (glibc >= 2.8). Node has no binding for
 * it, so it is called through koffi (a C FFI with prebuilt binaries), on libuv's thread pool: the
 * call holds each arena's lock while it walks the free chunks (4-100 ms measured), which the
 * event loop should not wait for. What it gave back in the bench: docs/memory.md.
 */

/** Runs one trim; resolves whether glibc gave any memory back. */
export type MallocTrim = () => Promise<boolean>

/** glibc's malloc_trim(0) on libuv's pool, or undefined where the process does not run on glibc. */
export async function loadMallocTrim(): Promise<MallocTrim | undefined> {
  if (!runsOnGlibc()) return undefined
  const { default: koffi } = await import('koffi')
  const trim = koffi.load('libc.so.6').func('int malloc_trim(size_t pad)')
  return () =>
    new Promise((resolve, reject) => {
      trim.async(0, (err: unknown, released: number) =>
        err
          ? reject(err instanceof Error ? err : new Error(`malloc_trim: ${JSON.stringify(err)}`))
          : resolve(released === 1),
      )
    })
}

function runsOnGlibc(): boolean {
  if (process.platform !== 'linux') return false
  const header = (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header
  return typeof header?.glibcVersionRuntime === 'string'
}

export interface MallocTrimmer {
  /** Stops the timer and waits for a trim under way. */
  stop(): Promise<void>
}

/**
 * Calls `trim` every `intervalMs` (never two at once) until stopped. A failed trim goes to
 * `onError` and the next one still runs: giving memory back never stops the service.
 */
export function startMallocTrimmer(
  trim: MallocTrim,
  intervalMs: number,
  onError: (err: unknown) => void,
): MallocTrimmer {
  let running: Promise<void> | undefined
  const timer = setInterval(() => {
    if (running) return
    running = trim().then(
      () => {
        running = undefined
      },
      (err: unknown) => {
        running = undefined
        onError(err)
      },
    )
  }, intervalMs)
  timer.unref()
  return {
    async stop() {
      clearInterval(timer)
      await running
    },
  }
}
