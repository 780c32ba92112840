/** Aborted while waiting for its turn: the task never ran. */
export class WaitCancelled extends Error {
  constructor() {
    super('the client closed the connection while the query waited for its turn')
    this.name = 'WaitCancelled'
  }
}

/**
 * Runs at most `limit` tasks at once; the others wait in arrival order. A waiting task whose signal
 * aborts leaves the queue without running.
 */
export class ConcurrencyLimit {
  private running = 0
  private readonly waiting: { start: () => void }[] = []

  constructor(private readonly limit: number) {
    if (!Number.isSafeInteger(limit) || limit < 1) throw new Error(`concurrency limit ${limit} must be >= 1`)
  }

  /** Tasks running or waiting. */
  get pending(): number {
    return this.running + this.waiting.length
  }

  /** Runs `task` in its turn; without `signal`, its wait is never called off. */
  async run<T>(signal: AbortSignal | undefined, task: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit) await this.turn(signal)
    else this.running++
    try {
      return await task()
    } finally {
      this.release()
    }
  }

  /** Resolves holding a slot (counted in `running`), or rejects when `signal` aborts first. */
  private turn(signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (!signal) {
        this.waiting.push({ start: resolve })
        return
      }
      const entry = {
        start: () => {
          signal.removeEventListener('abort', onAbort)
          resolve()
        },
      }
      const onAbort = () => {
        const i = this.waiting.indexOf(entry)
        if (i !== -1) this.waiting.splice(i, 1)
        reject(new WaitCancelled())
      }
      if (signal.aborted) return reject(new WaitCancelled())
      signal.addEventListener('abort', onAbort, { once: true })
      this.waiting.push(entry)
    })
  }

  private release(): void {
    const next = this.waiting.shift()
    // The slot passes straight to the next task: `running` stays as it is.
    if (next) next.start()
    else this.running--
  }
}
