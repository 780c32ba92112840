import type { Store } from '../connectors/store/store.ts'
import { jobCommandId, newCommand, type CoreCommand } from './commands.ts'

/**
 * A periodic job. The scheduler does not run it: once per period it emits a due-job command with
 * the id `${name}:${periodStart}` onto the control topic, and the control applier runs it once per
 * id. So two schedulers, or a scheduler restarted mid-period, emit the same command and the job
 * still runs once per period.
 */
export interface ScheduledJob {
  name: string
  /** Periods are aligned on multiples of this (ms since the epoch), the same on every scheduler. */
  intervalMs: number
  /**
   * The start of the period holding `now`, for a job whose periods are not multiples of a fixed
   * interval (a day that begins at 08:00 in a time zone with daylight saving time). Every
   * scheduler must compute the same start from the same instant. Default: aligned on intervalMs.
   */
  periodOf?(now: number): number
  /**
   * Run by the control applier, which holds the control partition meanwhile: keep it short (hand
   * long work to a pipeline of its own), and idempotent (an owner that dies mid-run leaves the
   * job journaled but not applied, and the next owner runs it again). Its value (JSON) is
   * recorded as the run's output; a throw is recorded as a failed run (status 500).
   */
  run(context: { store: Store; periodStart: number }): Promise<unknown>
}

export const periodStart = (now: number, intervalMs: number) => now - (now % intervalMs)

/** The command that asks for `job`'s run of the period holding `now`. */
export function dueJobCommand(
  job: Pick<ScheduledJob, 'name' | 'intervalMs' | 'periodOf'>,
  now: number,
): Extract<CoreCommand, { kind: 'run-job' }> {
  const start = job.periodOf ? job.periodOf(now) : periodStart(now, job.intervalMs)
  return newCommand('run-job', { job: job.name, period_start: start }, now, jobCommandId(job.name, start))
}

/**
 * Does nothing but run: its recorded runs are the proof that a scheduler and the control applier
 * are alive (GET /admin/v1/jobs shows when it last ran).
 */
export const heartbeatJob: ScheduledJob = {
  name: 'heartbeat',
  intervalMs: 60_000,
  run: () => Promise.resolve(null),
}
