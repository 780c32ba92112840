import { controlApplier } from '../../pipelines/control/control-applier.ts'
import type { ScheduledJob } from '../../pipelines/control/jobs.ts'
import { CONTROL } from '../control/control-plane.ts'
import { consumeStage } from './guarded-consumer.ts'
import type { WorkerPipeline } from './worker.ts'

/**
 * The control applier: one consumer group on the one-partition control topic, so one worker at a
 * time applies every admin write and due job, in order (pipelines/control/control-applier.ts).
 */
export function controlPipeline(jobs: readonly ScheduledJob[]): WorkerPipeline {
  return {
    name: 'control',
    async start(runtime) {
      const { store, logger, topology } = runtime
      const consumer = await consumeStage(runtime, {
        ...topology.stages.controlApplier,
        run: controlApplier({
          store,
          plane: CONTROL,
          jobs,
          onJobFailed: (job, periodStart, err) =>
            logger.error({ err, job, period_start: periodStart }, 'scheduled job failed'),
        }),
      })
      return { consumers: [consumer] }
    },
  }
}
