import { DeviceCache } from '../../pipelines/events/device-cache.ts'
import { eventsWriter } from '../../pipelines/events/events-writer.ts'
import { eventStore } from '../../pipelines/events/store-events.ts'
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
    // The embedded engine has one process, so this one is the only writer of its events: server
    // events go straight from the splitter into the store, whose filter of stored keys answers for
    // most look-ups. With a ClickHouse server, events go through the events topic to the writer
    // that owns their keys (DESIGN.md, exactly-once; docs/events.md, "How it flows").
    const embedded = store.kind === 'chdb'
    const events = eventStore({
      store,
      ...(embedded ? { soleWriter: true, storedKeys: new StoredKeys(store) } : {}),
      onStored: (n, source) => metrics.eventsStored.inc({ source }, n),
      onDuplicate: (n) => metrics.eventsRejected.inc({ reason: 'duplicate' }, n),
    })
    const writer = eventsWriter({ store, events })
    // The embedded engine's SDK builder runs here too, so it can tell the splitter's cache of
    // customers' devices what it writes; with a ClickHouse server another worker may write them.
    const devices = embedded ? new DeviceCache() : undefined
    const splitter = serverUploadSplitter({
      pool,
      store,
      bus,
      apps: control,
      forward: embedded ? { events } : { topic: topics.events.topic },
      ...(devices ? { devices } : {}),
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
      ...(devices ? { devices } : {}),
    })
    // One consumer per stage, behind the failure guard: commit after the stage, count what was
    // committed, dead-letter what keeps failing.
    const consumers = await Promise.all([
      consumeStage(runtime, { ...stages.eventsWriter, run: writer }),
      consumeStage(runtime, { ...stages.sdkBuilder, run: builder }),
      consumeStage(runtime, { ...stages.uploadSplitter, run: splitter }),
    ])
    return {
      consumers,
      // Writes the splitter started ahead of a batch end before the store closes.
      close: async () => {
        await splitter.drain()
        await pool.close()
      },
    }
  },
}
