import type { TopicSpec } from '../pipelines/connectors/bus/bus.ts'
import { CONTROL_PARTITION } from '../pipelines/control/commands.ts'

/** The processes Sluice runs: `sluice start` runs all three in one process. */
export type Role = 'edge' | 'worker' | 'scheduler'

/** One stage of a pipeline: the topic it consumes, as which consumer group, in batches of what size. */
export interface StageSpec {
  /** Names the stage in logs, metrics and dead letters. */
  stage: string
  group: string
  topic: string
  maxBatchRecords: number
  maxBatchBytes: number
}

/** A pipeline the worker role runs: the topics it owns (created at its start) and its stages. */
export interface PipelineSpec {
  name: string
  topics: TopicSpec[]
  stages: StageSpec[]
}

export type Topology = ReturnType<typeof topology>

const MB = 1024 * 1024

/**
 * Every flow of Sluice in one place: which topic feeds which stage of which pipeline, with which
 * consumer group and batch limits, which role produces onto it and which consumes it, and the
 * couplings between flows that no single stage shows. Names carry the configured prefix
 * (SLUICE_TOPIC_PREFIX); `partitions` is SLUICE_PARTITIONS or the bus's default.
 *
 *   edge ──► uploads ─────────► upload-splitter ──┐  (ingestion, worker)
 *   edge ──► sdk-uploads ─────► sdk-builder ──────┼─► events ──► events-writer ──► store
 *   edge ──► profile-changes ─► profile-writer ──► store            (profiles, worker)
 *   edge, scheduler ──► control (1 partition) ──► control-applier ──► store (control, worker)
 *   edge, audience refresh job ──► audience-counts ──► audience-counter ──► store (audiences, worker)
 *   edge, scheduler ──► push-requests ──► push-planner ──► push-deliveries ──► push-sender ──► transports, store (push, worker)
 *   edge, control jobs ──► exports ──► export-writer ──► files, store      (exports, worker)
 *   campaign tick job ──► campaign-ticks (1 partition) ──► campaign-executor ──► store, push-requests (campaigns, worker)
 *   edge ──► imports ──► import-processor ──► profile-changes (blocks, paced by the writer's lag), store (imports, worker)
 */
export function topology(prefix: string, partitions: number) {
  const topic = (name: string, count = partitions): TopicSpec => ({
    topic: `${prefix}${name}`,
    partitions: count,
  })
  const topics = {
    /** Server-side upload transactions, one record per request body, as received (edge). */
    uploads: topic('uploads'),
    /** SDK upload bodies, keyed by app so one owner builds each app's device state (edge). */
    sdkUploads: topic('sdk-uploads'),
    /** Validated, attributed events, keyed by app + uuid: the single owner of each uuid stores it once (splitter, SDK builder). */
    events: topic('events'),
    /** Accepted PATCHes and DELETEs, keyed by profile db + customer: one owner applies each customer's in order (edge). */
    profileChanges: topic('profile-changes'),
    /**
     * Admin writes (edge) and due jobs (scheduler). Every command goes to CONTROL_PARTITION, so one
     * partition gives one order over all of them and one applier at a time, whatever partition
     * count the broker gave the topic (librdkafka's mock makes 4).
     */
    control: topic('control', CONTROL_PARTITION + 1),
    /** Requests to count an audience, keyed by audience id (edge, the scheduled refresh job). */
    audienceCounts: topic('audience-counts'),
    /** Accepted push requests (edge, campaign scheduler), keyed by app: one planner owns an app's requests. */
    pushRequests: topic('push-requests'),
    /** Delivery batches of planned requests, keyed by app: one sender owns an app's send rate (planner). */
    pushDeliveries: topic('push-deliveries'),
    /** Requests to write export files, keyed by export (edge, control jobs). */
    exports: topic('exports'),
    /** Wake-ups of the campaign executor (the campaign-tick job): one partition, one executor at a time. */
    campaignTicks: topic('campaign-ticks', 1),
    /**
     * Imports whose bodies the edge stored in the files port (edge): keyed by import, or by
     * audience for audience imports so two imports into one audience apply in order.
     */
    imports: topic('imports'),
  }
  const stage = (
    name: string,
    group: string,
    on: TopicSpec,
    limits: Omit<StageSpec, 'stage' | 'group' | 'topic'>,
  ) => ({
    stage: name,
    group: `${prefix}${group}`,
    topic: on.topic,
    ...limits,
  })
  const stages = {
    // Up to 64 bodies or 8 MB: 32 gzip bodies (~236,000 events) or 64 plain ones (16,000 events).
    // The splitter writes a batch in groups as the CPU pool parses it (EVENTS_PER_WRITE) and lets
    // each group's uploads go after its write, so the batch bounds the bodies held, not the
    // insert's size or the parsed events; every batch also costs a receipts and a rejects insert
    // and a commit, which 13 plain bodies a batch (the old 1 MB) paid for 3,250 events. At 4 MB
    // (16 gzip bodies, ~53 plain ones) alternated with 16 MB, two e2e-only runs each: gzip
    // 140,303 / 146,546 -> 151,717 / 147,531 events/s, plain 19.2-20.8 -> 16.8-17.2 us per event;
    // 8 MB holds as many bodies in those runs (plain batches are 64 bodies, ~4.8 MB; gzip ones
    // what the window lets onto the log, ~25 bodies) and half of 16 MB's in a backlog.
    uploadSplitter: stage('upload-splitter', 'uploads-splitter', topics.uploads, {
      maxBatchRecords: 64,
      maxBatchBytes: 8 * MB,
    }),
    sdkBuilder: stage('sdk-builder', 'sdk-builder', topics.sdkUploads, {
      maxBatchRecords: 32,
      maxBatchBytes: 8 * MB,
    }),
    // Records are blocks of up to 5,000 events (~1.7 MB of compact rows): a batch is up to
    // 40,000 events, the output of one splitter batch of gzip bodies. Every batch costs engine round trips and a
    // new part per table (and the merges that follow); 10,000-event batches (the old limit,
    // 8 MB) held gzip uploads to 21,000-24,000 events/s, 35,000-event batches reached 28,000.
    eventsWriter: stage('events-writer', 'events-writer', topics.events, {
      maxBatchRecords: 8,
      maxBatchBytes: 32 * MB,
    }),
    profileWriter: stage('profile-writer', 'profile-writer', topics.profileChanges, {
      maxBatchRecords: 5000,
      maxBatchBytes: 16 * MB,
    }),
    // Commands are small; a burst of admin writes is applied with a few inserts per batch.
    controlApplier: stage('control-applier', 'control-applier', topics.control, {
      maxBatchRecords: 500,
      maxBatchBytes: 4 * MB,
    }),
    // Requests are small; one batch counts each audience it names once (the hourly refresh names all).
    audienceCounter: stage('audience-counter', 'audience-counter', topics.audienceCounts, {
      maxBatchRecords: 1000,
      maxBatchBytes: 1 * MB,
    }),
    // Requests are small; a burst of customer_id requests is planned with a few queries per batch.
    pushPlanner: stage('push-planner', 'push-planner', topics.pushRequests, {
      maxBatchRecords: 256,
      maxBatchBytes: 4 * MB,
    }),
    // A batch of one broadcast page (up to SLUICE_PUSH_BATCH_SIZE installs) or many small ones:
    // what a crash of the sender may send twice.
    pushSender: stage('push-sender', 'push-sender', topics.pushDeliveries, {
      maxBatchRecords: 256,
      maxBatchBytes: 4 * MB,
    }),
    // Requests are small and each file is long work: a batch shares one settle wait.
    exportWriter: stage('export-writer', 'export-writer', topics.exports, {
      maxBatchRecords: 64,
      maxBatchBytes: 1 * MB,
    }),
    // Ticks carry nothing: any number of them is one pass over the campaigns.
    campaignExecutor: stage('campaign-executor', 'campaign-executor', topics.campaignTicks, {
      maxBatchRecords: 1000,
      maxBatchBytes: 1 * MB,
    }),
    // One import a batch: an import is long work (minutes for 1 GB), paced by the profile writer.
    importProcessor: stage('import-processor', 'import-processor', topics.imports, {
      maxBatchRecords: 1,
      maxBatchBytes: 1 * MB,
    }),
  }
  const pipelines = {
    ingestion: {
      name: 'ingestion',
      topics: [topics.uploads, topics.sdkUploads, topics.events],
      stages: [stages.eventsWriter, stages.sdkBuilder, stages.uploadSplitter],
    },
    profiles: { name: 'profiles', topics: [topics.profileChanges], stages: [stages.profileWriter] },
    control: { name: 'control', topics: [topics.control], stages: [stages.controlApplier] },
    audiences: { name: 'audiences', topics: [topics.audienceCounts], stages: [stages.audienceCounter] },
    push: {
      name: 'push',
      topics: [topics.pushRequests, topics.pushDeliveries],
      stages: [stages.pushSender, stages.pushPlanner],
    },
    exports: { name: 'exports', topics: [topics.exports], stages: [stages.exportWriter] },
    campaigns: { name: 'campaigns', topics: [topics.campaignTicks], stages: [stages.campaignExecutor] },
    imports: { name: 'imports', topics: [topics.imports], stages: [stages.importProcessor] },
  } satisfies Record<string, PipelineSpec>
  /** Couplings between flows: each is a promise one stage or role makes about another's backlog. */
  const couplings = {
    /**
     * A profile import hands its next round of blocks to the profile writer only when the writer's
     * backlog is down to about one record per partition, so live PATCHes never queue behind a
     * whole import (pipelines/imports/profile-import.ts).
     */
    importsWaitOnProfileWriter: { group: stages.profileWriter.group, topic: stages.profileWriter.topic },
    /**
     * The upload splitter waits (bounded) until the SDK builder has no backlog before it declares a
     * customer unknown: an app that uploads its SDK sessions and, a moment later, its server-side
     * events must see them attributed (pipelines/events/device-lookup.ts).
     */
    splitterWaitsOnSdkBuilder: {
      group: stages.sdkBuilder.group,
      topic: stages.sdkBuilder.topic,
      waitMs: 5000,
    },
    /**
     * The edge sheds load (503 + Retry-After) when any of these backlogs passes SLUICE_MAX_BUS_LAG
     * records: whole bodies on the upload topics, blocks of up to 5,000 events on the events topic.
     */
    edgeShedsOnLagOf: [stages.uploadSplitter, stages.sdkBuilder, stages.eventsWriter].map(
      ({ group, topic }) => ({
        group,
        topic,
      }),
    ),
  }
  return {
    topics,
    stages,
    pipelines,
    couplings,
    /** Created before the edge serves (the control topic is created by the first command sent on it). */
    edgeTopics: [
      ...pipelines.ingestion.topics,
      ...pipelines.profiles.topics,
      ...pipelines.audiences.topics,
      topics.pushRequests,
      ...pipelines.exports.topics,
      ...pipelines.imports.topics,
    ],
  }
}
