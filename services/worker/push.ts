import { PLANNER_READ_INSTALLS, pushPlanner, type MemberSource } from '../../pipelines/push/planner.ts'
import { SendRate } from '../../pipelines/push/send-rate.ts'
import { pushSender } from '../../pipelines/push/sender.ts'
import type { TransportResolver } from '../../pipelines/push/transport.ts'
import { realClock } from '../../pipelines/failures/retry.ts'
import type { Runtime } from '../runtime.ts'
import { consumeStage } from './guarded-consumer.ts'
import type { WorkerPipeline } from './worker.ts'

export interface PushPipelineParts {
  /** The app's transports (shared with the edge in one process); closed by whoever opened it. */
  transports: (runtime: Runtime) => TransportResolver
  /** audience_id and profile targets (the audience compiler). */
  members?: (runtime: Runtime) => MemberSource
}

/**
 * The push pipeline: the planner (push-requests → delivery batches on push-deliveries) and the
 * sender (delivery batches → transports, push_deliveries), each behind the failure guard.
 */
export function pushPipeline(parts: PushPipelineParts): WorkerPipeline {
  return {
    name: 'push',
    async start(runtime) {
      const { store, bus, logger, topology, config } = runtime
      const transports = parts.transports(runtime)
      const planner = pushPlanner({
        store,
        emit: (messages) => bus.produce(topology.topics.pushDeliveries.topic, messages),
        pageSize: config.SLUICE_PUSH_BATCH_SIZE,
        batchesPerRead: Math.max(1, Math.floor(PLANNER_READ_INSTALLS / config.SLUICE_PUSH_BATCH_SIZE)),
        ...(parts.members && { members: parts.members(runtime) }),
        onPlanned: ({ record, generation, targeted, error }) =>
          logger[error ? 'warn' : 'info'](
            {
              app_id: record.appId,
              request_id: record.requestId,
              generation,
              target_type: record.targetType,
              targeted,
              ...(error && { error }),
            },
            'push request planned',
          ),
        onSkipped: (record, reason) =>
          logger.info({ app_id: record.appId, request_id: record.requestId, reason }, 'push request skipped'),
      })
      const sender = pushSender({
        store,
        transports,
        rate: new SendRate(config.SLUICE_PUSH_SEND_RATE_PER_APP, realClock),
        recordEvery: config.SLUICE_PUSH_BATCH_SIZE,
        retry: {
          attempts: config.SLUICE_PUSH_MAX_ATTEMPTS,
          deadlineMs: config.SLUICE_PUSH_RETRY_DEADLINE_MS,
          baseDelayMs: 500,
          maxDelayMs: 30_000,
        },
        onDelivered: ({ platform, transport, sent, failed }) => {
          if (sent > 0) runtime.metrics.pushDeliveries.inc({ platform, transport, status: 'sent' }, sent)
          if (failed > 0)
            runtime.metrics.pushDeliveries.inc({ platform, transport, status: 'failed' }, failed)
        },
      })
      const consumers = [
        await consumeStage(runtime, { ...topology.stages.pushSender, run: sender }),
        await consumeStage(runtime, { ...topology.stages.pushPlanner, run: planner }),
      ]
      return { consumers, close: () => transports.close() }
    },
  }
}
