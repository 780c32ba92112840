import { systemClock, type Clock } from '../../pipelines/clock.ts'
import { encodeCommand } from '../../pipelines/control/commands.ts'
import { dueJobCommand, type ScheduledJob } from '../../pipelines/control/jobs.ts'
import type { Runtime } from '../runtime.ts'

export type { ScheduledJob } from '../../pipelines/control/jobs.ts'

export interface RunningScheduler {
  /** Emit the due-job commands of the current periods not yet emitted (what each tick does). */
  tick(): Promise<void>
  close(): Promise<void>
}

export interface SchedulerOptions {
  /** Decides the periods (tests move it by hand). */
  clock?: Pick<Clock, 'now'>
  /** How often to look for a new period; default 1 s. */
  tickMs?: number
}

/**
 * The scheduler runs no job itself (DESIGN.md): once per period of each job it emits a due-job
 * command with the id `${job}:${periodStart}` onto the control topic, and the control applier
 * runs each id once. Any number of schedulers, and restarts mid-period, emit the same ids, so
 * nothing runs twice; a scheduler alone is enough for every period to run.
 */
export function startScheduler(
  runtime: Runtime,
  jobs: readonly ScheduledJob[],
  options: SchedulerOptions = {},
): RunningScheduler {
  const { bus, logger, topology } = runtime
  const clock = options.clock ?? systemClock
  const tickMs = options.tickMs ?? 1000
  const { topic } = topology.topics.control
  const emitted = new Map<string, number>()
  let topicReady: Promise<void> | undefined
  let stopped = false
  let timer: NodeJS.Timeout | undefined
  let inFlight: Promise<void> = Promise.resolve()

  const tick = async () => {
    const now = clock.now()
    const due = jobs
      .map((job) => dueJobCommand(job, now))
      .filter((c) => emitted.get(c.payload.job) !== c.payload.period_start)
    if (due.length === 0) return
    topicReady ??= bus.ensureTopics([topology.topics.control])
    try {
      await topicReady
      await bus.produce(topic, due.map(encodeCommand))
    } catch (err) {
      topicReady = undefined
      throw err
    }
    // Remembered only once durable: a failed produce is tried again at the next tick.
    for (const c of due) emitted.set(c.payload.job, c.payload.period_start)
  }

  const loop = () => {
    if (stopped) return
    inFlight = tick()
      .catch((err: unknown) => logger.error({ err }, 'could not emit due jobs; trying again'))
      .finally(() => {
        if (!stopped) timer = setTimeout(loop, tickMs)
      })
  }
  if (jobs.length > 0) timer = setTimeout(loop, 0)

  return {
    tick,
    async close() {
      stopped = true
      clearTimeout(timer)
      await inFlight
    },
  }
}
