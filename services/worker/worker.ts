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
  const started: { consumers: Consumer[]; close?: () => Promise<void> }[] = []
  for (const pipeline of pipelines) {
    await runtime.bus.ensureTopics(runtime.topology.pipelines[pipeline.name].topics)
    started.push(await pipeline.start(runtime))
    runtime.logger.info({ pipeline: pipeline.name }, 'pipeline started')
  }
  return {
    async close() {
      await Promise.all(started.flatMap((s) => s.consumers.map((c) => c.stop())))
      for (const s of started) await s.close?.()
    },
  }
}
