import { controlApplier } from '../../pipelines/control/control-applier.ts'
import { CONTROL_PARTITION, controlGroups, controlTopics } from '../../pipelines/control/commands.ts'
import type { ScheduledJob } from '../../pipelines/control/jobs.ts'
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
      const { config, bus, store, logger } = runtime
      const topic = controlTopics(config.SLUICE_TOPIC_PREFIX).commands
      await bus.ensureTopics([{ topic, partitions: CONTROL_PARTITION + 1 }])
      const consumer = await consumeStage(runtime, {
        stage: 'control-applier',
        group: controlGroups(config.SLUICE_TOPIC_PREFIX).applier,
        topic,
        // Commands are small; a burst of admin writes is applied with a few inserts per batch.
        maxBatchRecords: 500,
        maxBatchBytes: 4 * 1024 * 1024,
        run: controlApplier({
          store,
          jobs,
          onJobFailed: (job, periodStart, err) =>
            logger.error({ err, job, period_start: periodStart }, 'scheduled job failed'),
        }),
      })
      return { consumers: [consumer] }
    },
  }
}
