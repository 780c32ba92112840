import type { Bus } from '../connectors/bus/bus.ts'
import type { ScheduledJob } from '../control/jobs.ts'
import { encodeTick } from './executor.ts'

export const CAMPAIGN_TICK_JOB = 'campaign-tick'

/**
 * Wakes the campaign executor: once per period (SLUICE_CAMPAIGN_TICK_MS) the scheduler's due-job
 * command makes the control applier put one tick on the campaign-ticks topic. The job itself does
 * nothing else (it runs on the control partition); planning and dispatching run in the campaign
 * executor, a worker pipeline of its own. A tick repeated (two schedulers, a job re-run after a
 * crash) only makes the executor look again.
 */
export function campaignTickJob(deps: { bus: Bus; topic: string; intervalMs: number }): ScheduledJob {
  return {
    name: CAMPAIGN_TICK_JOB,
    intervalMs: deps.intervalMs,
    async run({ periodStart }) {
      await deps.bus.produce(deps.topic, [encodeTick(periodStart)])
      return null
    },
  }
}
