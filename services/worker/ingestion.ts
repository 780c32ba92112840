import { CpuPool } from '../../pipelines/cpu/pool.ts'
import { eventsWriter } from '../../pipelines/events/events-writer.ts'
import { ingestionGroups, ingestionTopics } from '../../pipelines/events/topics.ts'
import { serverUploadSplitter } from '../../pipelines/events/upload-splitter.ts'
import type { StageHandler } from '../../pipelines/failures/outcome.ts'
import { sdkBuilder } from '../../pipelines/sdk/sdk-builder.ts'
import type { Runtime } from '../runtime.ts'
import { consumeStage } from './guarded-consumer.ts'
import type { WorkerPipeline } from './worker.ts'

export async function ensureIngestionTopics(runtime: Runtime): Promise<void> {
  const topics = ingestionTopics(runtime.config.SLUICE_TOPIC_PREFIX)
  const partitions = runtime.partitions
  await runtime.bus.ensureTopics(Object.values(topics).map((topic) => ({ topic, partitions })))
}

/** Event ingestion: the upload splitter, the SDK state builder and the exactly-once events writer. */
export const ingestionPipeline: WorkerPipeline = {
  name: 'ingestion',
  async start(runtime) {
    const { config, bus, store, control, metrics } = runtime
    const topics = ingestionTopics(config.SLUICE_TOPIC_PREFIX)
    const groups = ingestionGroups(config.SLUICE_TOPIC_PREFIX)
    await ensureIngestionTopics(runtime)
    const pool = new CpuPool(config.SLUICE_WORKER_THREADS)
    // One consumer per stage, behind the failure guard: commit after the stage, count what was
    // committed, dead-letter what keeps failing.
    const stage = (
      name: string,
      group: string,
      topic: string,
      limits: { maxBatchRecords: number; maxBatchBytes: number },
      run: StageHandler,
    ) => consumeStage(runtime, { stage: name, group, topic, ...limits, run })

    const writer = eventsWriter({
      store,
      onStored: (n, source) => metrics.eventsStored.inc({ source }, n),
      onDuplicate: (n) => metrics.eventsRejected.inc({ reason: 'duplicate' }, n),
    })
    const splitter = serverUploadSplitter({
      pool,
      store,
      bus,
      control,
      eventsTopic: topics.events,
      sdk: { group: groups.sdkUploads, topic: topics.sdkUploads, waitMs: 5000 },
      pastWindowMs: config.SLUICE_EVENT_PAST_WINDOW_HOURS * 3_600_000,
      futureWindowMs: config.SLUICE_EVENT_FUTURE_WINDOW_HOURS * 3_600_000,
      maxInflatedBytes: config.SLUICE_UPLOAD_MAX_DECOMPRESSED_BYTES,
      onRejected: (reason, n) => metrics.eventsRejected.inc({ reason }, n),
    })
    const builder = sdkBuilder({
      pool,
      store,
      bus,
      eventsTopic: topics.events,
      maxInflatedBytes: config.SLUICE_UPLOAD_MAX_DECOMPRESSED_BYTES,
    })

    const MB = 1024 * 1024
    const consumers = await Promise.all([
      // Records are blocks of up to 5,000 events (~1.7 MB of compact rows): a batch is up to
      // 40,000 events, the output of one splitter batch of gzip bodies. Every batch costs engine round trips and a
      // new part per table (and the merges that follow); 10,000-event batches (the old limit,
      // 8 MB) held gzip uploads to 21,000-24,000 events/s, 35,000-event batches reached 28,000.
      stage(
        'events-writer',
        groups.events,
        topics.events,
        { maxBatchRecords: 8, maxBatchBytes: 32 * MB },
        writer,
      ),
      stage(
        'sdk-builder',
        groups.sdkUploads,
        topics.sdkUploads,
        { maxBatchRecords: 32, maxBatchBytes: 8 * MB },
        builder,
      ),
      stage(
        'upload-splitter',
        groups.uploads,
        topics.uploads,
        // About 1 MB of bodies: four gzip bodies (~30,000 events) or a dozen plain ones per batch,
        // which bounds the memory a batch holds while it is attributed.
        { maxBatchRecords: 16, maxBatchBytes: 1 * MB },
        splitter,
      ),
    ])
    return { consumers, close: () => pool.close() }
  },
}
