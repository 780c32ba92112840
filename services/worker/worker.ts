import type { Consumer } from '../../pipelines/connectors/bus/bus.ts'
import type { Runtime } from '../runtime.ts'
import type { Topology } from '../topology.ts'

/**
 * A pipeline the worker runs: it subscribes consumers to the bus and owns its own resources.
 * Its topics, groups and limits are its entry in the topology (topology.ts), under its name.
 * Subscribe each stage with consumeStage (guarded-consumer.ts), so a record that keeps failing is
 * dead-lettered instead of stalling its partition.
 */
export interface WorkerPipeline {
  name: keyof Topology['pipelines']
  start(runtime: Runtime): Promise<{ consumers: Consumer[]; close?: () => Promise<void> }>
}

export interface RunningWorker {
  /** Stop fetching, finish and commit the batches in flight, release pools. */
  close(): Promise<void>
}

export async function startWorker(
  runtime: Runtime,
  pipelines: readonly WorkerPipeline[],
): Promise<RunningWorker> {
  // All at once: each consumer waits for its group to be joined (seconds on Kafka), so starting a
  // dozen stages one after another made a worker take over 30 s to start.
  const skipped = new Set(runtime.config.SLUICE_WORKER_SKIP_PIPELINES)
  const outcomes = await Promise.allSettled(
    pipelines
      .filter((pipeline) => !skipped.has(pipeline.name))
      .map(async (pipeline) => {
        await runtime.bus.ensureTopics(runtime.topology.pipelines[pipeline.name].topics)
        const running = await pipeline.start(runtime)
        runtime.logger.info({ pipeline: pipeline.name }, 'pipeline started')
        return running
      }),
  )
  const started = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []))
  const close = async () => {
    await Promise.all(started.flatMap((s) => s.consumers.map((c) => c.stop())))
    for (const s of started) await s.close?.()
  }
  const failed = outcomes.find((o) => o.status === 'rejected')
  if (failed) {
    await close().catch(() => undefined)
    throw failed.reason
  }
  return { close }
}
