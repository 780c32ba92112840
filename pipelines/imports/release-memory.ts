/**
 * Runs `work`, calling `release` every `everyMs` until it ends: one call at a time (the next is
 * timed from the end of the last), none once `work` has ended. `everyMs` 0 or no `release`: just
 * `work`.
 *
 * Why: the embedded engine's allocator (jemalloc) keeps the pages an import's merges and inserts
 * free for its decay time (1 s), and they free some every fraction of a second all through an
 * import, so its resident memory stays tens of MB above what the engine holds. Handed back a few
 * times a second while an import runs, the process's RSS follows what the engine holds (measured:
 * docs/imports.md, "Speed"), at the cost of a purge each time, whose CPU the bench's 1M import
 * does not tell apart from the load's noise (0, 250 and 1,000 ms alternated); between imports the
 * decay time alone is enough.
 */
export async function releasingMemory<T>(
  work: () => Promise<T>,
  release: (() => Promise<void>) | undefined,
  everyMs: number,
): Promise<T> {
  if (!release || everyMs <= 0) return work()
  let running = true
  let timer: NodeJS.Timeout | undefined
  let pending: Promise<void> = Promise.resolve()
  const schedule = () => {
    timer = setTimeout(() => {
      pending = release()
        .catch(() => undefined)
        .then(() => {
          if (running) schedule()
        })
    }, everyMs)
  }
  schedule()
  try {
    return await work()
  } finally {
    running = false
    clearTimeout(timer)
    // A release under way finishes before the work is reported done (it uses the same store).
    await pending
  }
}
