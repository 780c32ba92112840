/**
 * Retention of the local log: deletes records below the lowest committed offset of every group
 * that ever consumed the topic. A topic no group has consumed keeps all its records, and a group
 * that stops consuming for good pins the log until its commit entries are removed.
 *
 * The file and its resident pages settle near the most unconsumed data held at once, so the
 * background sweep runs often (DEFAULT_INTERVAL_MS).
 */
import type { LogStore } from './log-store.ts'

export interface RetentionOptions {
  /** Consumed records younger than this stay. Default 0. */
  minAgeMs?: number
  /** Period of the background sweep. Default 500; 0 turns the timer off (see runRetention()). */
  intervalMs?: number
  /** Records deleted per write transaction, so a sweep never holds the write lock for long. */
  deletesPerTransaction?: number
}

export interface RetentionTarget {
  store: LogStore
  /** Known topics and their partition counts; read as they are when a sweep reaches them. */
  topics: ReadonlyMap<string, number>
  /** Registers a write that closing the log must wait for. */
  track: <T>(write: Promise<T>) => Promise<T>
}

// The file (and the pages of it the process has touched) settles near the most data it ever held
// at once: rate x (sweep period + consumer lag). At 100 MB/s a 5 s period held ~600 MB, 0.5 s ~70 MB.
const DEFAULT_INTERVAL_MS = 500
const DEFAULT_DELETES_PER_TXN = 1000

export class Retention {
  private readonly timer: NodeJS.Timeout | undefined
  private sweeping: Promise<number> | undefined
  private stopping = false

  constructor(
    private readonly target: RetentionTarget,
    private readonly options: RetentionOptions = {},
    /** Errors of background sweeps. */
    private readonly onBackgroundError: (err: unknown) => void = defaultBackgroundError,
  ) {
    const intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS
    if (intervalMs > 0) {
      this.timer = setInterval(() => this.sweepInBackground(), intervalMs)
      this.timer.unref()
    }
  }

  /** Deletes consumed records now; resolves to the count deleted. A sweep under way is shared. */
  run(): Promise<number> {
    this.sweeping ??= this.sweep().finally(() => (this.sweeping = undefined))
    return this.sweeping
  }

  /** Ends the background sweeps; a sweep under way stops after its current transaction. */
  async stop(): Promise<void> {
    this.stopping = true
    clearInterval(this.timer)
    await this.sweeping?.catch(() => undefined)
  }

  private async sweep(): Promise<number> {
    const { store, topics, track } = this.target
    const minAgeMs = this.options.minAgeMs ?? 0
    const perTxn = this.options.deletesPerTransaction ?? DEFAULT_DELETES_PER_TXN
    let deleted = 0
    for (const [topic, partitions] of topics) {
      for (let partition = 0; partition < partitions && !this.stopping; partition++) {
        for (;;) {
          const count = await track(store.trim(topic, partition, Date.now() - minAgeMs, perTxn))
          deleted += count
          if (count < perTxn || this.stopping) break
        }
      }
    }
    return deleted
  }

  private sweepInBackground(): void {
    if (this.stopping || this.sweeping !== undefined) return
    this.run().catch(this.onBackgroundError)
  }
}

function defaultBackgroundError(err: unknown): void {
  process.emitWarning(`local log retention sweep failed: ${String(err)}`)
}
