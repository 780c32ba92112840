import { randomBytes } from 'node:crypto'
import type { Hono } from 'hono'
import { ChdbStore } from '../pipelines/connectors/store/chdb-store.ts'
import {
  chdbCappedReads,
  clickhouseCappedReads,
  type CappedReads,
} from '../pipelines/connectors/store/capped-reads.ts'
import { ClickHouseStore } from '../pipelines/connectors/store/clickhouse-store.ts'
import { QueryKeyLimits } from './edge/query/key-limits.ts'
import { queryRoutes } from './edge/routes/query.ts'
import { appRoutes } from './edge/routes/apps.ts'
import { appSettingsAdminRoutes } from './edge/routes/app-settings-admin.ts'
import { ConcurrencyLimit } from './shared/concurrency-limit.ts'
import { DEFAULT_ASSET_LIMITS } from '../pipelines/campaigns/inapp-assets.ts'
import { campaignSlotMembers } from '../pipelines/campaigns/slot-targets.ts'
import { campaignTickJob } from '../pipelines/campaigns/tick-job.ts'
import { campaignsPipeline } from './worker/campaigns.ts'
import { safeEqual } from './control/credentials.ts'
import { heartbeatJob } from '../pipelines/control/jobs.ts'
import { audienceRefreshJob } from '../pipelines/audiences/refresh-job.ts'
import { storeCountQuery } from '../pipelines/audiences/audience-counter.ts'
import { DeadLetterStore } from '../pipelines/failures/dead-letters.ts'
import { resolveAdminToken } from './admin-token.ts'
import type { Config } from './config.ts'
import { createEdge } from './edge/app.ts'
import type { EdgeEnv } from './edge/env.ts'
import type { ReadinessCheck } from './edge/routes/health.ts'
import { CountRequester } from './edge/audiences/count-requests.ts'
import { audienceRoutes } from './edge/routes/audiences.ts'
import { campaignRoutes } from './edge/routes/campaigns.ts'
import { inappSdkRoutes } from './edge/routes/inapp-sdk.ts'
import { exportEdgeRouters, exportJobs } from './edge/exports/export-area.ts'
import { profileRoutes } from './edge/routes/profiles.ts'
import { importRoutes } from './edge/routes/imports.ts'
import { pushRoutes } from './edge/routes/push.ts'
import { pushTransportAdminRoutes } from './edge/routes/push-transports-admin.ts'
import { PushTransportConfigs } from './push/transport-configs.ts'
import { createTransportResolver } from './push/transport-resolver.ts'
import type { DirectRoute } from './edge/direct-dispatch.ts'
import { uploadRoutes } from './edge/routes/uploads.ts'
import { listen } from './edge/serve.ts'
import { LoadShedder } from './edge/uploads/load-shedder.ts'
import { UploadBuffers } from './edge/uploads/upload-buffers.ts'
import { createGzipCheck } from '../pipelines/events/gzip-check.ts'
import { transactionKey, TransactionKey } from './edge/uploads/transaction-id.ts'
import { startOpsServer } from './ops-server.ts'
import { openRuntime, type Runtime } from './runtime.ts'
import { startScheduler, type ScheduledJob } from './scheduler/scheduler.ts'
import type { Logger } from './shared/logger.ts'
import { ChdbAnalystEngine } from './sql-port/analyst-engine.ts'
import { startSqlPort } from './sql-port/sql-port.ts'
import type { Role } from './topology.ts'
import { audiencesPipeline } from './worker/audiences.ts'
import { exportsPipeline } from './worker/exports.ts'
import { controlPipeline } from './worker/control.ts'
import { ingestionPipeline } from './worker/ingestion.ts'
import { importsPipeline } from './worker/imports.ts'
import { profilesPipeline } from './worker/profiles.ts'
import { pushPipeline } from './worker/push.ts'
import type { TransportResolver } from '../pipelines/push/transport.ts'
import { audienceMembers, audienceRefusal } from '../pipelines/push/members.ts'
import type { MemberSource } from '../pipelines/push/planner.ts'
import { startWorker, type WorkerPipeline } from './worker/worker.ts'

export interface RunningProcess {
  runtime: Runtime
  url?: string
  port?: number
  sqlPort?: number
  /** The ops port (health, readiness, metrics) of a process without an edge. */
  opsPort?: number
  adminToken?: string
  adminTokenGenerated: boolean
  /** The edge's Hono app, when this process runs one (its route table is checked against the API document). */
  edgeApp?: Hono<EdgeEnv>
  /** Graceful: stop accepting, drain requests, finish and commit batches, close adapters. */
  shutdown(): Promise<void>
}

/**
 * The composition root: start the given roles in this process over one runtime, each assembled
 * from the topology (topology.ts) and the lists below. `sluice start` runs all three (and the SQL
 * port when the store is chdb); `sluice edge|worker|scheduler` run one each.
 */
export async function startProcess(
  config: Config,
  logger: Logger,
  roles: readonly Role[],
): Promise<RunningProcess> {
  const runtime = await openRuntime(config, logger)
  const closers: (() => Promise<void>)[] = []
  let draining = false
  const embedded = runtime.store.kind === 'chdb'
  const { token, generated } = await resolveAdminToken(config.SLUICE_ADMIN_TOKEN, runtime.dataDir, embedded)
  const result: RunningProcess = {
    runtime,
    adminToken: token,
    adminTokenGenerated: generated,
    async shutdown() {
      draining = true
      // Reverse start order: the edge stops taking work before the workers stop doing it.
      for (const close of closers.reverse()) {
        await close().catch((err: unknown) => logger.error({ err }, 'error during shutdown'))
      }
      await runtime.close()
    },
  }
  try {
    if (roles.includes('worker')) {
      const worker = await startWorker(runtime, workerPipelines(runtime))
      closers.push(() => worker.close())
    }
    if (roles.includes('scheduler')) {
      const scheduler = startScheduler(runtime, scheduledJobs(runtime))
      closers.push(() => scheduler.close())
    }
    if (!roles.includes('edge')) {
      // The edge serves these itself; a worker or scheduler alone gets a port of its own.
      const ops = await startOpsServer({
        host: config.SLUICE_OPS_HOST,
        port: config.SLUICE_OPS_PORT,
        metrics: runtime.metrics,
        logger,
        readiness: readinessChecks(runtime),
        isDraining: () => draining,
      })
      closers.push(() => ops.close())
      result.opsPort = ops.port
    }
    if (roles.includes('edge')) {
      if (!token) logger.warn('SLUICE_ADMIN_TOKEN is not set: the admin API answers 401 to everything')
      await runtime.bus.ensureTopics(runtime.topology.edgeTopics)
      const areas = edgeAreas(runtime, { adminToken: token })
      areas.start()
      closers.push(() => areas.stop())
      const edge = createEdge({
        control: runtime.control,
        logger,
        metrics: runtime.metrics,
        adminToken: token,
        readiness: readinessChecks(runtime),
        isDraining: () => draining,
        areas: areas.routers,
        directRoutes: areas.direct,
        deadLetters: { store: new DeadLetterStore(runtime.store), bus: runtime.bus },
        requireHttps: {
          trustedProxies: config.SLUICE_TRUSTED_PROXIES,
          allowPlainHttp: config.SLUICE_ALLOW_PLAIN_HTTP,
        },
        ...(config.SLUICE_AUTH_FAILURES_PER_ADDRESS_PER_MIN > 0 && {
          authFailureLimit: {
            perAddressPerMinute: config.SLUICE_AUTH_FAILURES_PER_ADDRESS_PER_MIN,
            trustedProxies: config.SLUICE_TRUSTED_PROXIES,
          },
        }),
      })
      const tls =
        config.SLUICE_TLS_CERT && config.SLUICE_TLS_KEY
          ? { certPath: config.SLUICE_TLS_CERT, keyPath: config.SLUICE_TLS_KEY }
          : undefined
      const server = await listen(edge.app, config.HOST, config.PORT, {
        direct: edge.direct,
        ...(tls && { tls }),
      })
      closers.push(() => server.close())
      if (tls) {
        // A renewed certificate is taken without a restart: `kill -HUP` after replacing the files.
        const reload = () =>
          server.reloadTls().then(
            () => logger.info({ cert: tls.certPath }, 'TLS certificate reloaded'),
            (err: unknown) =>
              logger.error({ err }, 'TLS certificate reload failed; keeping the previous one'),
          )
        process.on('SIGHUP', reload)
        closers.push(async () => void process.off('SIGHUP', reload))
      }
      result.port = server.port
      result.edgeApp = edge.app
      result.url = `${server.scheme}://${config.HOST === '0.0.0.0' ? '127.0.0.1' : config.HOST}:${server.port}`
    }
    if (roles.includes('edge') && runtime.store instanceof ChdbStore && token) {
      const adminToken = token
      // Analysts' statements run on connections of their own, never on the pipelines' (analyst-engine.ts).
      const analysts = await ChdbAnalystEngine.open(runtime.store, {
        maxExecutionSeconds: config.SLUICE_SQL_MAX_EXECUTION_SECONDS,
        maxMemoryBytes: config.SLUICE_SQL_MAX_MEMORY_BYTES,
        maxResultBytes: config.SLUICE_SQL_MAX_RESULT_BYTES,
        maxThreads: config.SLUICE_SQL_MAX_THREADS,
      })
      closers.push(() => analysts.close())
      const sql = await startSqlPort({
        executor: runtime.store,
        host: config.SLUICE_SQL_HOST,
        port: config.SLUICE_SQL_PORT,
        readOnly: true,
        analysts,
        maxConcurrentQueries: config.SLUICE_SQL_MAX_CONCURRENT_QUERIES,
        headersTimeoutMs: config.SLUICE_SQL_HEADERS_TIMEOUT_MS,
        requestTimeoutMs: config.SLUICE_SQL_REQUEST_TIMEOUT_MS,
        defaultDatabase: runtime.store.database,
        authenticate: (user, password) => safeEqual(user, 'admin') && safeEqual(password, adminToken),
        logger,
      })
      closers.push(() => sql.close())
      result.sqlPort = sql.port
    }
  } catch (err) {
    await result.shutdown()
    throw err
  }
  return result
}

/** The edge's API areas: one router each, and what they run in the background. */
export interface EdgeAreas {
  routers: Hono<EdgeEnv>[]
  /** Routes the edge's server also takes before Hono's dispatch (the server-side upload). */
  direct: DirectRoute[]
  start(): void
  /** Stops what they run in the background and closes what they keep open (after the server has drained). */
  stop(): Promise<void>
}

/**
 * Upload-body memory the edge keeps between uploads (UploadBuffers): about 100 plain bodies of the
 * bench's size, more than its senders have in flight; bodies beyond it are allocated as before.
 */
const UPLOAD_BUFFERS_IDLE_BYTES = 8 * 1024 * 1024

export function edgeAreas(runtime: Runtime, secrets: { adminToken: string | undefined }): EdgeAreas {
  const { config, bus, store, control, metrics, logger, topology } = runtime
  if (!secrets.adminToken)
    logger.warn('no admin token: upload transaction ids can only be looked up on the edge that issued them')
  const shedder = new LoadShedder({
    bus,
    watched: topology.couplings.edgeShedsOnLagOf,
    maxLag: config.SLUICE_MAX_BUS_LAG,
    maxBacklogMs: config.SLUICE_MAX_BACKLOG_SECONDS * 1000,
    maxInFlightBytes: config.SLUICE_UPLOAD_MAX_IN_FLIGHT_BYTES,
    onSample: (topic, lag) => metrics.busLag.set({ topic }, lag),
  })
  const checkGzip = createGzipCheck({
    onFallback: (err) =>
      logger.warn({ err }, 'zlib could not be called directly: gzip uploads are checked through node:zlib'),
  })
  const uploads = uploadRoutes({
    bus,
    store,
    control,
    topics: { uploads: topology.topics.uploads.topic, sdkUploads: topology.topics.sdkUploads.topic },
    shedder,
    metrics,
    transactionKey: secrets.adminToken
      ? transactionKey(secrets.adminToken)
      : new TransactionKey(randomBytes(32)),
    checkGzip,
    buffers: new UploadBuffers({
      maxBytes: config.SLUICE_UPLOAD_MAX_BYTES,
      maxIdleBytes: UPLOAD_BUFFERS_IDLE_BYTES,
    }),
    limits: {
      maxBytes: config.SLUICE_UPLOAD_MAX_BYTES,
      maxInflatedBytes: config.SLUICE_UPLOAD_MAX_DECOMPRESSED_BYTES,
      ratePerKeyPerSecond: config.SLUICE_UPLOAD_RATE_PER_KEY,
      sdkRatePerAppPerSecond: config.SLUICE_SDK_UPLOAD_RATE_PER_APP,
    },
  })
  const profiles = profileRoutes({
    bus,
    store,
    control,
    topic: topology.topics.profileChanges.topic,
    metrics,
    limits: {
      perKeyPerMinute: config.SLUICE_PROFILE_RATE_PER_KEY_PER_MIN,
      perCustomerPerMinute: config.SLUICE_PROFILE_RATE_PER_CUSTOMER_PER_MIN,
    },
  })
  const imports = importRoutes({
    bus,
    store,
    files: runtime.files,
    control,
    commands: runtime.commands,
    topic: topology.topics.imports.topic,
    limits: {
      maxBytes: config.SLUICE_IMPORT_MAX_BYTES,
      maxInflatedBytes: config.SLUICE_IMPORT_MAX_INFLATED_BYTES,
    },
  })
  // The Query and Apps APIs (and audience previews) share the edge's turns on the engine.
  const reads = analystReads(runtime)
  const engineTurns = new ConcurrencyLimit(config.SLUICE_QUERY_MAX_CONCURRENT)
  const audiences = audienceRoutes({
    store,
    control,
    commands: runtime.commands,
    logger,
    preview: { countQuery: storeCountQuery(reads), turns: engineTurns },
    counts: new CountRequester({
      bus,
      store,
      topic: topology.topics.audienceCounts.topic,
      waitMs: config.SLUICE_AUDIENCE_COUNT_WAIT_MS,
    }),
  })
  const campaigns = campaignRoutes({
    store,
    control,
    commands: runtime.commands,
    files: runtime.files,
    inapp: inappLimits(config),
  })
  const push = pushRoutes({
    bus,
    store,
    control,
    topic: topology.topics.pushRequests.topic,
    metrics,
    transports: pushTransports(runtime),
    audiences: (org, appId, id) => audienceRefusal(store, org, appId, id),
    limits: {
      customerIdPerSecond: config.SLUICE_PUSH_RATE_CUSTOMER_ID_PER_SECOND,
      broadcastPerMinute: config.SLUICE_PUSH_RATE_BROADCAST_PER_MINUTE,
      profilePerHour: config.SLUICE_PUSH_RATE_PROFILE_PER_HOUR,
      audienceIdPerMinute: config.SLUICE_PUSH_RATE_AUDIENCE_ID_PER_MINUTE,
      newCampaignKeysPerDay: config.SLUICE_PUSH_NEW_CAMPAIGN_KEYS_PER_DAY,
    },
  })
  const inappSdk = inappSdkRoutes({
    store,
    control,
    files: runtime.files,
    ratePerAppPerSecond: config.SLUICE_SDK_UPLOAD_RATE_PER_APP,
  })
  const pushTransportAdmin = pushTransportAdminRoutes({
    control,
    configs: new PushTransportConfigs(store, control),
    adminToken: secrets.adminToken,
  })
  // The Query and Apps APIs share the per-key limits and the edge's turns on the engine.
  const analysts = {
    control,
    store,
    reads,
    limits: new QueryKeyLimits({
      concurrent: config.SLUICE_QUERY_CONCURRENT_PER_KEY,
      perMinute: config.SLUICE_QUERY_RATE_PER_KEY_PER_MIN,
      perHour: config.SLUICE_QUERY_RATE_PER_KEY_PER_HOUR,
      perDay: config.SLUICE_QUERY_RATE_PER_KEY_PER_DAY,
    }),
    engineTurns,
  }
  return {
    routers: [
      uploads.routes,
      queryRoutes(analysts),
      appRoutes(analysts),
      appSettingsAdminRoutes({ control, store, adminToken: secrets.adminToken }),
      profiles,
      imports,
      audiences,
      campaigns,
      push,
      inappSdk,
      pushTransportAdmin,
      ...exportEdgeRouters(runtime, secrets.adminToken),
    ],
    direct: [uploads.direct],
    start: () => shedder.start(),
    stop: async () => {
      shedder.stop()
      await reads.close()
    },
  }
}

/** The Query API's reads: under the engine's caps, off the pipelines' connections (capped-reads.ts). */
function analystReads(runtime: Runtime): CappedReads {
  const { store, config } = runtime
  const caps = {
    maxExecutionSeconds: config.SLUICE_QUERY_MAX_EXECUTION_SECONDS,
    maxMemoryBytes: config.SLUICE_QUERY_MAX_MEMORY_BYTES,
    maxThreads: config.SLUICE_QUERY_MAX_THREADS,
  }
  // As many connections kept as reads may run at once (the edge's turns on the engine).
  if (store instanceof ChdbStore) return chdbCappedReads(store, caps, config.SLUICE_QUERY_MAX_CONCURRENT)
  if (store instanceof ClickHouseStore) return clickhouseCappedReads(store, caps)
  throw new Error(`no capped reads for a ${store.kind} store`)
}

/**
 * The members of audience_id and profile push targets (the audience compiler over the store), and
 * of campaign_slot ones (the installs a campaign occurrence's plan put in that slot).
 */
function pushMembers(runtime: Runtime): MemberSource {
  const slots = campaignSlotMembers(runtime.store)
  const audiences = audienceMembers(runtime.store, {
    async profileDbsOf(orgId, appId) {
      const [app, org] = await Promise.all([runtime.control.getApp(appId), runtime.control.getOrg(orgId)])
      return app && org ? { app: app.profiledb_id, org: org.profiledb_id } : undefined
    },
  })
  return {
    pagesOf: (record) =>
      record.targetType === 'campaign_slot' ? slots.pagesOf(record) : audiences.pagesOf(record),
  }
}

/**
 * The push transports: each app's as configured through the admin API (services/push/
 * transport-resolver.ts); the file transport for both platforms of an app that configured none.
 */
function pushTransports(runtime: Runtime): TransportResolver {
  return createTransportResolver(runtime)
}

/** The worker's pipelines; each one's topics, groups and limits are its entry in the topology. */
export function workerPipelines(runtime: Runtime): WorkerPipeline[] {
  // The control applier runs the jobs the scheduler emits, so both take the same list.
  return [
    ingestionPipeline,
    profilesPipeline,
    controlPipeline(scheduledJobs(runtime)),
    audiencesPipeline,
    pushPipeline({ transports: pushTransports, members: pushMembers }),
    exportsPipeline,
    campaignsPipeline,
    importsPipeline,
  ]
}

export function scheduledJobs(runtime: Runtime): ScheduledJob[] {
  const { bus, config, topology } = runtime
  return [
    heartbeatJob,
    audienceRefreshJob({
      bus,
      topic: topology.topics.audienceCounts.topic,
      intervalMs: config.SLUICE_AUDIENCE_REFRESH_SECONDS * 1000,
    }),
    ...exportJobs(runtime),
    campaignTickJob({
      bus,
      topic: topology.topics.campaignTicks.topic,
      intervalMs: config.SLUICE_CAMPAIGN_TICK_MS,
    }),
  ]
}

function inappLimits(config: Runtime['config']) {
  return {
    maxRequestBytes: config.SLUICE_INAPP_MAX_REQUEST_BYTES,
    asset: {
      ...DEFAULT_ASSET_LIMITS,
      maxFileBytes: config.SLUICE_INAPP_MAX_FILE_BYTES,
      maxUnzippedBytes: config.SLUICE_INAPP_MAX_UNZIPPED_BYTES,
    },
  }
}

export function readinessChecks(runtime: Runtime): ReadinessCheck[] {
  return [{ name: 'store', check: () => runtime.store.ping() }]
}
