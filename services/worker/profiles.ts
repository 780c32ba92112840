import { profileWriter } from '../../pipelines/profiles/profile-writer.ts'
import { consumeStage } from './guarded-consumer.ts'
import type { WorkerPipeline } from './worker.ts'

/** The profile writer: applies accepted PATCHes and DELETEs to the profiles and the change log. */
export const profilesPipeline: WorkerPipeline = {
  name: 'profiles',
  async start(runtime) {
    const { store, logger, topology } = runtime
    // An undecodable record is dead-lettered by the guard (the writer reports it), not only logged.
    const writer = profileWriter({
      store,
      onIgnored: (command, ignored, changeId) =>
        logger.info(
          { profiledb_id: command.db, customer_id: command.customer, change_id: changeId, ignored },
          'profile changes refused by the current profile',
        ),
    })
    const consumer = await consumeStage(runtime, { ...topology.stages.profileWriter, run: writer })
    return { consumers: [consumer] }
  },
}
