import { availableParallelism } from 'node:os'
import { BroadcastChannel } from 'node:worker_threads'
import { Piscina } from 'piscina'
import type { CpuResult, CpuRunner, CpuTask } from '../../pipelines/cpu/tasks.ts'
import { ConcurrencyLimit } from '../shared/concurrency-limit.ts'
import { WORKER_RESOURCE_LIMITS } from '../shared/process-memory.ts'
import { registerPoolThread } from '../shared/thread-cpu.ts'

/** Each pool thread posts its kernel thread id here when it starts (worker-entry.mjs). */
const POOL_THREADS_CHANNEL = 'sluice:cpu-pool-threads'

/**
 * Threads for `cores` cores: half of them, at least one. The pool's work is about a fifth of
 * ingestion's CPU per event (inflating, scanning, packing; the engine and the main thread do the
 * rest), and it runs ahead of the writes (uploads are parsed before their group is written), so
 * half the cores leave it twice what it needs.
 * More threads cost more than they give: each is a V8 isolate with its own heap and collections,
 * and on a busy machine they take turns with the engine's threads. On 2 cores, one thread instead
 * of two made e2e-gzip 141,600 → 152,700 events/s (11.6 µs of CPU per event instead of 12.3) and
 * left e2e-plain as it was (measured at `d4a6e13`; docs/performance.md, "Ingestion"). Two threads
 * were better while a batch's uploads were parsed only when it began and the pool did twice the
 * work per event (before `2e3286e` and `766c5fc`).
 */
export function defaultPoolThreads(cores: number): number {
  return Math.max(1, Math.floor(cores / 2))
}

/** The pool of threads that runs CPU stages, so the event loop stays free for I/O. */
export class CpuPool implements CpuRunner {
  private readonly piscina: Piscina<CpuTask, CpuResult>
  private readonly threadIds = new BroadcastChannel(POOL_THREADS_CHANNEL)
  private readonly gate: ConcurrencyLimit

  /**
   * `queuedPerThread`: tasks that may wait for a thread, per thread, before callers wait instead
   * (their tasks held by the caller, not handed to piscina).
   */
  constructor(threads = 0, queuedPerThread = 64) {
    const size = threads > 0 ? threads : defaultPoolThreads(availableParallelism())
    const queued = size * queuedPerThread
    // The one bound on what the pool holds: the tasks running and `queued` more; the callers past
    // it wait here, in order. (Piscina's own `maxQueue` refuses a task past it instead, "Task
    // queue is at limit", and the upload splitter alone asks for up to two batches of uploads at
    // once: its own and the next one's, parsed ahead, 128 tiny uploads, with the SDK builder
    // beside it.)
    this.gate = new ConcurrencyLimit(size + queued)
    // Their CPU time is the pool's in the split by kind of thread (/metrics, the bench).
    this.threadIds.onmessage = (message) => {
      const tid: unknown = (message as { data: unknown }).data
      if (typeof tid === 'number') registerPoolThread(tid)
    }
    this.threadIds.unref()
    this.piscina = new Piscina({
      filename: new URL('./worker-entry.mjs', import.meta.url).href,
      minThreads: size,
      maxThreads: size,
      idleTimeout: 60_000,
      // Small young generations: each thread's semi-spaces stay resident (docs/memory.md).
      resourceLimits: WORKER_RESOURCE_LIMITS,
    })
  }

  run(task: CpuTask): Promise<CpuResult> {
    // No signal: a task, once asked for, is run (its wait for a thread is never called off).
    return this.gate.run(undefined, () => this.piscina.run(task))
  }

  get threads(): number {
    return this.piscina.maxThreads
  }

  /** Tasks handed to the threads' queue and not yet running (at most `queuedPerThread` per thread). */
  get queued(): number {
    return this.piscina.queueSize
  }

  async close(): Promise<void> {
    this.threadIds.close()
    await this.piscina.destroy()
  }
}
