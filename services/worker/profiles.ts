import { profileGroups, profileTopics } from '../../pipelines/profiles/commands.ts'
import { profileWriter } from '../../pipelines/profiles/profile-writer.ts'
import type { Runtime } from '../runtime.ts'
import type { WorkerPipeline } from './worker.ts'

export async function ensureProfileTopics(runtime: Runtime): Promise<void> {
  const topics = profileTopics(runtime.config.SLUICE_TOPIC_PREFIX)
  const partitions = runtime.partitions
  await runtime.bus.ensureTopics(Object.values(topics).map((topic) => ({ topic, partitions })))
}

/** The profile writer: applies accepted PATCHes and DELETEs to the profiles and the change log. */
export const profilesPipeline: WorkerPipeline = {
  name: 'profiles',
  async start(runtime) {
    const { config, bus, store, metrics, logger } = runtime
    const topics = profileTopics(config.SLUICE_TOPIC_PREFIX)
    const groups = profileGroups(config.SLUICE_TOPIC_PREFIX)
    await ensureProfileTopics(runtime)
    const writer = profileWriter({
      store,
      onIgnored: (command, ignored, changeId) =>
        logger.info(
          { profiledb_id: command.db, customer_id: command.customer, change_id: changeId, ignored },
          'profile changes refused by the current profile',
        ),
      onUndecodable: (record, reason) =>
        logger.error(
          { topic: record.topic, partition: record.partition, offset: record.offset, reason },
          'skipped an undecodable profile record',
        ),
    })
    const consumer = await bus.consume({
      group: groups.writer,
      topics: [topics.changes],
      maxBatchRecords: 5000,
      maxBatchBytes: 16 * 1024 * 1024,
      handler: async (batch) => {
        await writer(batch)
        metrics.busConsumed.inc({ topic: batch.topic }, batch.records.length)
      },
      onError: (err, batch) =>
        logger.error(
          { err, stage: 'profile-writer', topic: batch.topic, partition: batch.partition },
          'batch failed; will retry',
        ),
    })
    return { consumers: [consumer] }
  },
}
