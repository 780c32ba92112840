import type { Runtime } from '../runtime.ts'

/** A periodic job: runs every `intervalMs`, never overlapping itself. */
export interface ScheduledJob {
  name: string
  intervalMs: number
  run(runtime: Runtime): Promise<void>
}

export interface RunningScheduler {
  close(): Promise<void>
}

export function startScheduler(runtime: Runtime, jobs: readonly ScheduledJob[]): RunningScheduler {
  let stopped = false
  const timers: NodeJS.Timeout[] = []
  const inFlight = new Set<Promise<void>>()
  for (const job of jobs) {
    const tick = () => {
      if (stopped) return
      const run = job
        .run(runtime)
        .catch((err: unknown) => runtime.logger.error({ err, job: job.name }, 'scheduled job failed'))
        .finally(() => {
          inFlight.delete(run)
          if (!stopped) timers.push(setTimeout(tick, job.intervalMs))
        })
      inFlight.add(run)
    }
    timers.push(setTimeout(tick, Math.min(job.intervalMs, 1000)))
  }
  return {
    async close() {
      stopped = true
      for (const t of timers) clearTimeout(t)
      await Promise.all([...inFlight])
    },
  }
}
