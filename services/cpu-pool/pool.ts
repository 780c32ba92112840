import { availableParallelism } from 'node:os'
import { BroadcastChannel } from 'node:worker_threads'
import { Piscina } from 'piscina'
import type { CpuResult, CpuRunner, CpuTask } from '../../pipelines/cpu/tasks.ts'
import { WORKER_RESOURCE_LIMITS } from '../shared/process-memory.ts'
import { registerPoolThread } from '../shared/thread-cpu.ts'

/** Each pool thread posts its kernel thread id here when it starts (worker-entry.mjs). */
const POOL_THREADS_CHANNEL = 'sluice:cpu-pool-threads'

/** The pool of threads that runs CPU stages, so the event loop stays free for I/O. */
export class CpuPool implements CpuRunner {
  private readonly piscina: Piscina<CpuTask, CpuResult>
  private readonly threadIds = new BroadcastChannel(POOL_THREADS_CHANNEL)

  constructor(threads = 0) {
    // At least two: the pool parses a splitter batch's uploads side by side while the engine is
    // idle between inserts; with one thread the second core idled then (2 threads on 2 shared
    // cores: ~20 % more events/s and ~10 % less CPU per event, issue 17's tuning log).
    const size = threads > 0 ? threads : Math.max(2, availableParallelism() - 1)
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
      // A bounded queue: callers wait in the consumer instead of piling up tasks in memory.
      maxQueue: size * 64,
      idleTimeout: 60_000,
      // Small young generations: each thread's semi-spaces stay resident (docs/memory.md).
      resourceLimits: WORKER_RESOURCE_LIMITS,
    })
  }

  run(task: CpuTask): Promise<CpuResult> {
    return this.piscina.run(task)
  }

  get threads(): number {
    return this.piscina.maxThreads
  }

  async close(): Promise<void> {
    this.threadIds.close()
    await this.piscina.destroy()
  }
}
