import { encodePushRequest } from '../../schemas/push.ts'
import { campaignExecutor } from '../../pipelines/campaigns/executor.ts'
import { DISPATCH_AHEAD_MS } from '../../pipelines/campaigns/occurrences.ts'
import { consumeStage } from './guarded-consumer.ts'
import type { WorkerPipeline } from './worker.ts'

/**
 * The campaign executor (pipelines/campaigns/executor.ts): on each tick, plans the push campaign
 * occurrences that are due and hands their due slots to the push pipeline as push requests. One
 * consumer group on a one-partition topic: one executor at a time, failing over with the group.
 */
export const campaignsPipeline: WorkerPipeline = {
  name: 'campaigns',
  async start(runtime) {
    const { store, bus, logger, topology } = runtime
    const executor = campaignExecutor({
      store,
      startOnTimeWithinMs: runtime.config.SLUICE_CAMPAIGN_TICK_MS,
      dispatchAheadMs: DISPATCH_AHEAD_MS,
      planAheadMs: runtime.config.SLUICE_CAMPAIGN_PLAN_AHEAD_MS,
      produce: (records) => bus.produce(topology.topics.pushRequests.topic, records.map(encodePushRequest)),
      onPlanned: (info) =>
        logger.info({ campaign_id: info.campaignId, ...info }, 'campaign occurrence planned'),
      onFailed: ({ campaignId, occurrence, error }) =>
        logger.warn({ campaign_id: campaignId, occurrence, err: error }, 'campaign occurrence not planned'),
    })
    const consumer = await consumeStage(runtime, { ...topology.stages.campaignExecutor, run: executor })
    return { consumers: [consumer] }
  },
}
