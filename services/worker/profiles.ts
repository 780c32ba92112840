import { profileGroups, profileTopics } from '../../pipelines/profiles/commands.ts'
import { profileWriter } from '../../pipelines/profiles/profile-writer.ts'
import type { Runtime } from '../runtime.ts'
import { consumeStage } from './guarded-consumer.ts'
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
    const { config, store, logger } = runtime
    const topics = profileTopics(config.SLUICE_TOPIC_PREFIX)
    const groups = profileGroups(config.SLUICE_TOPIC_PREFIX)
    await ensureProfileTopics(runtime)
    // An undecodable record is dead-lettered by the guard (the writer reports it), not only logged.
    const writer = profileWriter({
      store,
      onIgnored: (command, ignored, changeId) =>
        logger.info(
          { profiledb_id: command.db, customer_id: command.customer, change_id: changeId, ignored },
          'profile changes refused by the current profile',
        ),
    })
    const consumer = await consumeStage(runtime, {
      stage: 'profile-writer',
      group: groups.writer,
      topic: topics.changes,
      maxBatchRecords: 5000,
      maxBatchBytes: 16 * 1024 * 1024,
      run: writer,
    })
    return { consumers: [consumer] }
  },
}
