import type { Consumer } from '../../pipelines/connectors/bus/bus.ts'
import { DeadLetterStore } from '../../pipelines/failures/dead-letters.ts'
import { guardStage, type GuardOptions } from '../../pipelines/failures/guarded-stage.ts'
import type { StageHandler } from '../../pipelines/failures/outcome.ts'
import type { Runtime } from '../runtime.ts'

export interface StageConsumer {
  /** Names the stage in logs, metrics and dead letters. */
  stage: string
  group: string
  topic: string
  maxBatchRecords: number
  maxBatchBytes: number
  run: StageHandler
  /** Bounds and clock of the guard (tests); the defaults suit production. */
  guard?: Pick<GuardOptions, 'batchPolicy' | 'recordPolicy' | 'isolationBudgetMs' | 'clock'>
}

/**
 * A consumer of one stage behind the failure guard: a record that keeps failing is dead-lettered
 * and the partition moves on; only an outage makes the bus redeliver. Every pipeline's consumers
 * are made here, so every stage gets the same failure routing.
 */
export async function consumeStage(runtime: Runtime, spec: StageConsumer): Promise<Consumer> {
  const { bus, store, metrics, logger } = runtime
  const handler = guardStage(spec.run, {
    stage: spec.stage,
    deadLetters: new DeadLetterStore(store),
    healthy: () => store.ping(),
    ...spec.guard,
    onRetry: ({ batch, attempt, error, delayMs }) => {
      metrics.stageRetries.inc({ stage: spec.stage })
      logger.warn(
        {
          err: error,
          stage: spec.stage,
          topic: batch.topic,
          partition: batch.partition,
          offset: batch.records[0]?.offset,
          records: batch.records.length,
          attempt,
          delayMs,
        },
        'stage failed; retrying',
      )
    },
    onDeadLetter: (letter, kind) => {
      metrics.deadLetters.inc({ stage: spec.stage })
      const { topic, partition, offset } = letter.record
      logger.error(
        { stage: spec.stage, topic, partition, offset, kind, attempts: letter.attempts, error: letter.error },
        'record dead-lettered; the partition moves on',
      )
    },
  })
  const consumer = await bus.consume({
    group: spec.group,
    topics: [spec.topic],
    maxBatchRecords: spec.maxBatchRecords,
    maxBatchBytes: spec.maxBatchBytes,
    handler: async (batch) => {
      const done = metrics.stageDuration.startTimer({ stage: spec.stage })
      metrics.stageInFlight.inc({ stage: spec.stage })
      try {
        await handler(batch)
      } finally {
        metrics.stageInFlight.dec({ stage: spec.stage })
      }
      done()
      metrics.stageRecords.inc({ stage: spec.stage }, batch.records.length)
      metrics.busConsumed.inc({ topic: batch.topic }, batch.records.length)
    },
    // Only outages reach the bus (the guard handles the rest): it redelivers after its backoff.
    onError: (err, batch) =>
      logger.error(
        { err, stage: spec.stage, topic: batch.topic, partition: batch.partition },
        'batch failed (outage); will retry',
      ),
  })
  // Lag is sampled where it is consumed, so every worker's /metrics shows what it is behind by.
  const sample = () =>
    bus.lag(spec.group, spec.topic).then(
      (lag) => metrics.consumerLag.set({ group: spec.group, topic: spec.topic }, lag),
      (err: unknown) => logger.debug({ err, group: spec.group, topic: spec.topic }, 'lag sample failed'),
    )
  void sample()
  const timer = setInterval(() => void sample(), LAG_SAMPLE_MS)
  timer.unref()
  return {
    async stop() {
      clearInterval(timer)
      await consumer.stop()
    },
  }
}

const LAG_SAMPLE_MS = 5_000
