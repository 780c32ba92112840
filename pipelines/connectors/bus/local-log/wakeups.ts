/** In-process wake-ups: a consumer waiting on a partition resumes as soon as a produce commits. */
export class Wakeups {
  private readonly waiting = new Map<string, Set<() => void>>()

  wait(id: string, timeoutMs: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve()
      const waiters = this.waiting.get(id) ?? new Set()
      this.waiting.set(id, waiters)
      const wake = () => {
        clearTimeout(timer)
        signal.removeEventListener('abort', wake)
        waiters.delete(wake)
        if (waiters.size === 0) this.waiting.delete(id)
        resolve()
      }
      const timer = setTimeout(wake, timeoutMs)
      signal.addEventListener('abort', wake, { once: true })
      waiters.add(wake)
    })
  }

  notify(id: string): void {
    const waiters = this.waiting.get(id)
    if (waiters !== undefined) for (const wake of [...waiters]) wake()
  }
}

/** Signalled when topics are created, so consumers start on their partitions. */
export const TOPICS_CHANGED = 'topics'

/** Signalled when records were appended to the partition. */
export function partitionSignal(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`
}
