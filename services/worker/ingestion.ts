import { eventsWriter } from '../../pipelines/events/events-writer.ts'
import { StoredKeys } from '../../pipelines/events/stored-keys.ts'
import { serverUploadSplitter } from '../../pipelines/events/upload-splitter.ts'
import { sdkBuilder } from '../../pipelines/sdk/sdk-builder.ts'
import { CpuPool } from '../cpu-pool/pool.ts'
import { consumeStage } from './guarded-consumer.ts'
import type { WorkerPipeline } from './worker.ts'

/** Event ingestion: the upload splitter, the SDK state builder and the exactly-once events writer. */
export const ingestionPipeline: WorkerPipeline = {
  name: 'ingestion',
  async start(runtime) {
    const { config, bus, store, control, metrics, topology } = runtime
    const { topics, stages, couplings } = topology
    const pool = new CpuPool(config.SLUICE_WORKER_THREADS)
    const writer = eventsWriter({
      store,
      // Only the embedded engine's one process writes its events (see StoredKeys).
      ...(store.kind === 'chdb' ? { storedKeys: new StoredKeys(store) } : {}),
      onStored: (n, source) => metrics.eventsStored.inc({ source }, n),
      onDuplicate: (n) => metrics.eventsRejected.inc({ reason: 'duplicate' }, n),
    })
    const splitter = serverUploadSplitter({
      pool,
      store,
      bus,
      apps: control,
      eventsTopic: topics.events.topic,
      sdk: couplings.splitterWaitsOnSdkBuilder,
      pastWindowMs: config.SLUICE_EVENT_PAST_WINDOW_HOURS * 3_600_000,
      futureWindowMs: config.SLUICE_EVENT_FUTURE_WINDOW_HOURS * 3_600_000,
      maxInflatedBytes: config.SLUICE_UPLOAD_MAX_DECOMPRESSED_BYTES,
      onRejected: (reason, n) => metrics.eventsRejected.inc({ reason }, n),
    })
    const builder = sdkBuilder({
      pool,
      store,
      bus,
      eventsTopic: topics.events.topic,
      maxInflatedBytes: config.SLUICE_UPLOAD_MAX_DECOMPRESSED_BYTES,
    })
    // One consumer per stage, behind the failure guard: commit after the stage, count what was
    // committed, dead-letter what keeps failing.
    const consumers = await Promise.all([
      consumeStage(runtime, { ...stages.eventsWriter, run: writer }),
      consumeStage(runtime, { ...stages.sdkBuilder, run: builder }),
      consumeStage(runtime, { ...stages.uploadSplitter, run: splitter }),
    ])
    return { consumers, close: () => pool.close() }
  },
}
