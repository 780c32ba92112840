import { availableParallelism } from 'node:os'
import { Piscina } from 'piscina'
import type { CpuResult, CpuRunner, CpuTask } from '../../pipelines/cpu/tasks.ts'

/** The pool of threads that runs CPU stages, so the event loop stays free for I/O. */
export class CpuPool implements CpuRunner {
  private readonly piscina: Piscina<CpuTask, CpuResult>

  constructor(threads = 0) {
    const size = threads > 0 ? threads : Math.max(1, availableParallelism() - 1)
    this.piscina = new Piscina({
      filename: new URL('./worker-entry.mjs', import.meta.url).href,
      minThreads: size,
      maxThreads: size,
      // A bounded queue: callers wait in the consumer instead of piling up tasks in memory.
      maxQueue: size * 64,
      idleTimeout: 60_000,
    })
  }

  run(task: CpuTask): Promise<CpuResult> {
    return this.piscina.run(task)
  }

  get threads(): number {
    return this.piscina.maxThreads
  }

  async close(): Promise<void> {
    await this.piscina.destroy()
  }
}
