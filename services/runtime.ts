import { join, resolve } from 'node:path'
import type { Bus } from '../pipelines/connectors/bus/bus.ts'
import { KafkaBus } from '../pipelines/connectors/bus/kafka/kafka-bus.ts'
import { LocalLog } from '../pipelines/connectors/bus/local-log/local-log.ts'
import type { Files } from '../pipelines/connectors/files/files.ts'
import { LocalFiles } from '../pipelines/connectors/files/local-files.ts'
import { ChdbStore } from '../pipelines/connectors/store/chdb-store.ts'
import { ClickHouseStore } from '../pipelines/connectors/store/clickhouse-store.ts'
import { migrate, type MigrateOptions } from '../pipelines/connectors/store/migrations.ts'
import type { Store } from '../pipelines/connectors/store/store.ts'
import { CommandClient, type CommandSender } from './control/command-client.ts'
import { ControlStore } from './control/control-store.ts'
import type { Config } from './config.ts'
import { retentionSettings } from './retention-config.ts'
import type { Logger } from './shared/logger.ts'
import { createMetrics, type Metrics } from './shared/metrics.ts'
import { topology, type Topology } from './topology.ts'

/** Everything a Sluice process is wired from: the adapters behind the ports, and shared services. */
export interface Runtime {
  config: Config
  logger: Logger
  metrics: Metrics
  bus: Bus
  store: Store
  files: Files
  control: ControlStore
  /** Control commands: produced onto the control topic, answered by the applier (ControlStore's siblings use it). */
  commands: CommandSender
  dataDir: string
  /** Every topic, stage and limit, named with the configured prefix and partition count. */
  topology: Topology
  /** 'embedded' when both bus and store are local; 'distributed' when both are servers. */
  mode: 'embedded' | 'distributed' | 'mixed'
  close(): Promise<void>
}

/**
 * Open the adapters the configuration asks for: Kafka when KAFKA_BROKERS is set, else the local
 * log; a ClickHouse server when CLICKHOUSE_URL is set, else chdb. Migrations run at open.
 */
export async function openRuntime(config: Config, logger: Logger): Promise<Runtime> {
  const dataDir = resolve(config.SLUICE_DATA_DIR)
  const metrics = createMetrics()
  const store = await openStore(config, dataDir)
  const bus = await openBus(config, dataDir, logger)
  const files = new LocalFiles(join(dataDir, 'files'))
  try {
    const migrated = await migrate(store, undefined, migrateOptions(config))
    if (migrated.applied.length > 0) logger.info({ applied: migrated.applied }, 'migrations applied')
    if (migrated.retention?.length) logger.info({ retention: migrated.retention }, 'table retention changed')
  } catch (err) {
    await bus.close()
    await store.close()
    throw err
  }
  const flows = topology(
    config.SLUICE_TOPIC_PREFIX,
    config.SLUICE_PARTITIONS ?? (bus.kind === 'local' ? 1 : 8),
  )
  // Reads through short caches; writes as commands on the control topic, applied by one owner.
  const commands = new CommandClient({
    bus,
    store,
    topic: flows.topics.control.topic,
    waitMs: config.SLUICE_CONTROL_WAIT_MS,
  })
  const control = new ControlStore(store, config.SLUICE_KEY_CACHE_SECONDS * 1000, {}, commands)
  const mode =
    bus.kind === 'local' && store.kind === 'chdb'
      ? 'embedded'
      : bus.kind === 'kafka' && store.kind === 'clickhouse'
        ? 'distributed'
        : 'mixed'
  logger.info({ mode, bus: bus.kind, store: store.kind, dataDir }, 'adapters open')
  return {
    config,
    logger,
    metrics,
    bus,
    store,
    files,
    control,
    commands,
    dataDir,
    topology: flows,
    mode,
    async close() {
      await bus.close()
      await store.close()
    },
  }
}

/**
 * How migrations run: in their cluster form when CLICKHOUSE_CLUSTER names one; then each retained
 * table's TTL from its retention setting (retention-config.ts).
 */
export function migrateOptions(config: Config): MigrateOptions {
  const retention = retentionSettings(config)
  return config.CLICKHOUSE_CLUSTER
    ? { cluster: { cluster: config.CLICKHOUSE_CLUSTER, database: config.CLICKHOUSE_DATABASE }, retention }
    : { retention }
}

export async function openStore(config: Config, dataDir: string): Promise<Store> {
  if (config.CLICKHOUSE_URL) {
    return ClickHouseStore.open({
      url: config.CLICKHOUSE_URL,
      username: config.CLICKHOUSE_USER,
      password: config.CLICKHOUSE_PASSWORD,
      database: config.CLICKHOUSE_DATABASE,
      ...(config.CLICKHOUSE_CLUSTER ? { cluster: config.CLICKHOUSE_CLUSTER } : {}),
    })
  }
  return ChdbStore.open(join(dataDir, 'clickhouse'), config.CLICKHOUSE_DATABASE, {
    mergeNice: config.SLUICE_ENGINE_MERGE_NICE,
  })
}

async function openBus(config: Config, dataDir: string, logger: Logger): Promise<Bus> {
  if (config.KAFKA_BROKERS && config.KAFKA_BROKERS.length > 0) {
    return new KafkaBus({
      brokers: config.KAFKA_BROKERS,
      clientId: config.KAFKA_CLIENT_ID,
      defaultPartitions: config.SLUICE_PARTITIONS ?? 8,
      sessionTimeoutMs: config.KAFKA_SESSION_TIMEOUT_MS,
      heartbeatIntervalMs: Math.max(500, Math.floor(config.KAFKA_SESSION_TIMEOUT_MS / 10)),
      leaderSyncDelayMs: config.KAFKA_LEADER_SYNC_DELAY_MS,
      logger,
    })
  }
  return LocalLog.open({
    path: join(dataDir, 'log'),
    partitions: config.SLUICE_PARTITIONS ?? 1,
    // One logger for every part: the log's background sweeps report through it too.
    onBackgroundError: (err) => logger.error({ err, component: 'local-log' }, 'retention sweep failed'),
  })
}
