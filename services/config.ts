import { isIP } from 'node:net'
import { z } from 'zod'
import { flag, int, optionalInt, optionalText, optionalUrl, port, splitList } from './config-fields.ts'
import { exportConfig } from './exports-config.ts'
import { MAX_RETENTION_DAYS } from '../schemas/clickhouse/retention.ts'

const isAddressOrRange = (entry: string): boolean => {
  const [address = '', bits, extra] = entry.split('/')
  const family = isIP(address)
  if (family === 0 || extra !== undefined) return false
  return bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128))
}

/*
 * Every setting Sluice reads, by area. This is the one source of docs/configuration.md: to add a
 * setting, put it in its area with a builder of config-fields.ts and a `.describe()` saying what
 * it does (a sentence or a few; `docs/<page>.md` becomes a link), then run `npm run docs:config`.
 * A test fails when the page is stale or when code reads a variable that is not here.
 */

const processes = {
  PORT: port(8080).describe('HTTP port of the edge (HTTPS when `SLUICE_TLS_CERT` is set).'),
  HOST: z.string().default('0.0.0.0').describe('Address the edge listens on.'),
  SLUICE_DATA_DIR: z
    .string()
    .min(1)
    .default('./data')
    .describe(
      'Where an embedded Sluice keeps its local log, chdb data, files and generated admin token; one process per directory.',
    ),
  SLUICE_OPS_PORT: port(9464).describe(
    'Health, readiness and metrics of a process that runs no edge (`sluice worker`, `sluice scheduler`); `0` picks a free port, printed at start.',
  ),
  SLUICE_OPS_HOST: z.string().default('0.0.0.0').describe('Address of the ops port.'),
  SLUICE_LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe('pino level of the JSON log lines on stdout.'),
  SLUICE_SHUTDOWN_TIMEOUT_MS: int(15_000, 0).describe(
    'How long a graceful stop after SIGTERM may take (requests and batches in flight finish) before the process exits anyway.',
  ),
  SLUICE_WORKER_THREADS: int(0, 0).describe(
    'piscina threads of the CPU pool (inflating, scanning and packing uploads); `0`: half the cores, at least 1.',
  ),
  SLUICE_WORKER_SKIP_PIPELINES: z
    .string()
    .meta({ format: 'comma-separated list' })
    .default('')
    .transform(splitList)
    .describe(
      'Worker pipelines not to run (`ingestion`, `profiles`, `control`, ...). The bench runs its edge-only Sluice with `ingestion`, so the edge is measured without the pipeline behind it.',
    ),
  SLUICE_URL: optionalText('uri').describe(
    'Address of the edge the `sluice admin` and `sluice import` CLIs call (`--url` wins); unset: `http://127.0.0.1:$PORT`.',
  ),
  SLUICE_API_KEY: optionalText().describe(
    'API key the `sluice import` CLI sends (`--key` wins; docs/imports.md).',
  ),
  SLUICE_API_SECRET: optionalText().describe('API secret the `sluice import` CLI sends (`--secret` wins).'),
}

const security = {
  SLUICE_ADMIN_TOKEN: optionalText()
    .pipe(z.string().min(16, 'must be at least 16 characters').optional())
    .describe(
      'Bearer token of the admin API and password of the SQL port; at least 16 characters. Unset in embedded mode: generated on the first start and kept in `$SLUICE_DATA_DIR/admin-token` (mode 0600). Unset in distributed mode: the admin API refuses every request.',
    ),
  SLUICE_TLS_CERT: optionalText('file path').describe(
    "PEM file of the edge's certificate (chain). Set with `SLUICE_TLS_KEY`, the edge serves HTTPS on `PORT`, with HTTP/2 offered by ALPN; both files are read again on SIGHUP.",
  ),
  SLUICE_TLS_KEY: optionalText('file path').describe(
    'PEM file of the edge\'s private key; set both or neither (README.md, "HTTPS").',
  ),
  SLUICE_ALLOW_PLAIN_HTTP: flag().describe(
    'Answer plain HTTP from any address (private networks, tests). Unset: plain HTTP is answered only to loopback clients and to trusted proxies that send `X-Forwarded-Proto: https`; anything else gets 403.',
  ),
  SLUICE_TRUSTED_PROXIES: optionalText('comma-separated list')
    .pipe(
      z
        .string()
        .optional()
        .transform((v) => splitList(v ?? ''))
        .refine((entries) => entries.every(isAddressOrRange), 'must be IP addresses or CIDR ranges'),
    )
    .describe(
      "Addresses or CIDR ranges of the proxies in front of the edge: only their `X-Forwarded-For` names the client (for the plain-HTTP rule and the per-address limits). Unset: the socket's peer is the client.",
    ),
  SLUICE_AUTH_FAILURES_PER_ADDRESS_PER_MIN: int(600, 0).describe(
    'Failed authentications (API key and secret, admin token) a client address (an IPv6 one by its /64) may make per minute, per edge; past it every request from that address that needs credentials gets 429 with Retry-After until the count refills. 10 a second is enough for a load or timing test from one machine, far too few to guess a 32-byte secret, and it caps the hashing work bad credentials can cost. `0`: no limit.',
  ),
  SLUICE_KEY_CACHE_SECONDS: int(5, 0).describe(
    'How long an edge caches API keys and apps, so how long a revoked key keeps working; the cache holds at most 10,000 of each, least recently used out first.',
  ),
}

const busAndStore = {
  KAFKA_BROKERS: optionalText('comma-separated list')
    .transform((v) => (v === undefined ? undefined : splitList(v)))
    .describe('Kafka brokers; set, the bus is Kafka (distributed mode). Unset: the local log.'),
  KAFKA_CLIENT_ID: z.string().default('sluice').describe('Kafka client id.'),
  KAFKA_SESSION_TIMEOUT_MS: int(30_000, 1000).describe(
    "Consumer-group session timeout: how long a dead worker holds its partitions before the group moves them (Kafka's minimum: 6000).",
  ),
  KAFKA_LEADER_SYNC_DELAY_MS: int(0, 0, 60_000).describe(
    "How long a consumer group's leader waits before sending the group's assignment, when the group has other members. `0` on Kafka. Set `1000` on librdkafka's mock cluster (the tests and the bench do): it answers a member's SyncGroup that comes after the leader's with INVALID_REQUEST, where a broker hands the member its assignment (docs/scaling.md, \"How consumers ride a rebalance\").",
  ),
  SLUICE_TOPIC_PREFIX: z.string().default('sluice.').describe('Prefix of every topic.'),
  SLUICE_PARTITIONS: optionalInt(1).describe(
    'Partitions of the topics Sluice creates. Unset: 1 on the local log (one engine runs one query at a time, so fewer, bigger batches win) and 8 on Kafka (spread over workers).',
  ),
  CLICKHOUSE_URL: optionalUrl().describe(
    'A ClickHouse server, e.g. `http://clickhouse:8123`; set, it is the store (distributed mode). Unset: chdb in the process.',
  ),
  SLUICE_ENGINE_MERGE_NICE: int(0, 0, 19).describe(
    "Nice value of the embedded engine's merge threads (ClickHouse's `os_threads_nice_value_merge_mutate`): above 0, merges yield the CPU to the pipeline's inserts and to queries and run on what is left; 0 schedules them alike. Embedded mode only: a ClickHouse server reads it from its own configuration (docs/performance.md, \"Engine settings\").",
  ),
  CLICKHOUSE_USER: z.string().default('default').describe('ClickHouse user.'),
  CLICKHOUSE_PASSWORD: z.string().default('').describe('ClickHouse password.'),
  CLICKHOUSE_DATABASE: z
    .string()
    .meta({ format: 'identifier' })
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a plain identifier')
    .default('sluice')
    .describe('Database of every table.'),
  CLICKHOUSE_CLUSTER: optionalText('identifier')
    .pipe(
      z
        .string()
        .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a plain identifier')
        .optional(),
    )
    .describe(
      "A ClickHouse cluster's name (its `remote_servers` entry): migrations run their cluster form (ON CLUSTER, replicated tables, Distributed tables in front of sharded ones; docs/scaling.md). Needs `CLICKHOUSE_URL`. Unset: one ClickHouse server, the migrations as written.",
    ),
}

/*
 * Retention: the migration step (every start, and `sluice migrate`) sets each table's TTL from
 * these, and changes it only when a setting changed (pipelines/connectors/store/retention.ts).
 */
const keptDays = (what: string) =>
  optionalInt(1, MAX_RETENTION_DAYS).describe(
    `Days ${what} are kept (a TTL on the table, \`ON CLUSTER\` on the shards' tables with \`CLICKHOUSE_CLUSTER\`), counted from the time named; older rows go at the engine's next merges. Unset: kept until deleted (docs/scaling.md, "Retention per table").`,
  )

const retention = {
  SLUICE_RETENTION_EVENTS_DAYS: keptDays(
    'events (`events`, by `event_time`; keep it above `SLUICE_EVENT_PAST_WINDOW_HOURS`, or late events expire on arrival)',
  ),
  SLUICE_RETENTION_SESSIONS_DAYS: keptDays('sessions (`sessions`, by `started_at`)'),
  SLUICE_RETENTION_ROLLUP_DAYS: keptDays(
    "the Query API rollups' hours (`query_rollup` and `query_session_hours`, by `hour`; kept longer than events, they still answer the queries they fit for hours whose events are gone: docs/query-api.md)",
  ),
  SLUICE_RETENTION_PROFILE_CHANGES_DAYS: keptDays(
    'profile changes (`profile_changes`, by `at`; profiles themselves are state and are kept)',
  ),
  SLUICE_RETENTION_PUSH_DELIVERIES_DAYS: keptDays('push deliveries (`push_deliveries`, by `planned_at`)'),
  SLUICE_RETENTION_UPLOAD_RECEIPTS_DAYS: int(30, 1, MAX_RETENTION_DAYS).describe(
    'Days upload receipts and rejected lines (`upload_receipts`, `rejected_lines`, by `received_at`) are kept: how long `GET /v0/uploads/:transaction_id` can answer for an upload. A TTL on both tables (`ON CLUSTER` on the shards\' tables with `CLICKHOUSE_CLUSTER`), changed by the migration step when this changes (docs/scaling.md, "Retention per table").',
  ),
}

const sqlPort = {
  SLUICE_SQL_PORT: port(8123).describe(
    "Embedded SQL port: ClickHouse's HTTP interface, read-only, user `admin`, password the admin token (docs/sql-port.md).",
  ),
  SLUICE_SQL_HOST: z.string().default('127.0.0.1').describe('Address of the SQL port.'),
  // Set on each analyst statement's engine connection with readonly=1, so no query lifts them.
  SLUICE_SQL_MAX_EXECUTION_SECONDS: int(60, 1).describe(
    'Time limit of a statement, enforced by the engine (`max_execution_time`; then code 159).',
  ),
  SLUICE_SQL_MAX_MEMORY_BYTES: int(1024 * 1024 * 1024, 1).describe(
    'Memory limit of a statement (`max_memory_usage`; then code 241).',
  ),
  SLUICE_SQL_MAX_RESULT_BYTES: int(128 * 1024 * 1024, 1).describe(
    'Result size limit of a statement (`max_result_bytes`, uncompressed blocks before formatting; then code 396); the port holds a result in memory before it answers.',
  ),
  SLUICE_SQL_MAX_THREADS: int(1, 1).describe(
    'Engine threads per statement: fewer than the cores leaves CPU to the public API.',
  ),
  SLUICE_SQL_MAX_CONCURRENT_QUERIES: int(2, 1).describe(
    "Statements running at once; the others wait their turn. Each holds one of libuv's threads (`UV_THREADPOOL_SIZE`, 4): keep it below that.",
  ),
  SLUICE_SQL_HEADERS_TIMEOUT_MS: int(10_000, 1).describe(
    'A connection that has not sent its headers by then gets 408 and is closed.',
  ),
  SLUICE_SQL_REQUEST_TIMEOUT_MS: int(30_000, 1).describe(
    'A connection that has not sent its whole request by then gets 408 and is closed (a statement running longer is not affected).',
  ),
}

const ingestion = {
  SLUICE_UPLOAD_MAX_BYTES: int(256 * 1024, 1).describe('Event upload body limit (413 at or above it).'),
  SLUICE_UPLOAD_MAX_DECOMPRESSED_BYTES: int(64 * 1024 * 1024, 1).describe(
    'Limit of a gzip body once inflated (413).',
  ),
  SLUICE_IMPORT_MAX_BYTES: int(1024 * 1024 * 1024, 1).describe(
    'Largest profile or audience import body as sent (413 at or above it; docs/imports.md).',
  ),
  SLUICE_IMPORT_MAX_INFLATED_BYTES: int(16 * 1024 * 1024 * 1024, 1).describe(
    'Largest gzip import body once inflated (413 at or above it; docs/imports.md).',
  ),
  SLUICE_IMPORT_ROUND_ROWS: int(20_000, 1).describe(
    'Rows of a profile import handed to the profile writer at a time (a round): a live PATCH waits behind at most about one round (docs/imports.md).',
  ),
  SLUICE_IMPORT_RELEASE_MS: int(250, 0).describe(
    'While an import runs on the embedded engine, its allocator hands freed memory back to the system every this many ms (0: only once a round; docs/imports.md).',
  ),
  SLUICE_UPLOAD_RATE_PER_KEY: int(150, 1).describe('Event upload transactions per second per API key (429).'),
  SLUICE_SDK_UPLOAD_RATE_PER_APP: int(1000, 1).describe(
    'SDK upload requests per second per app key, per edge (many devices share one key; 429 with Retry-After).',
  ),
  SLUICE_EVENT_PAST_WINDOW_HOURS: int(72, 0).describe('How far in the past an `event_time` is accepted.'),
  SLUICE_EVENT_FUTURE_WINDOW_HOURS: int(48, 0).describe('How far in the future an `event_time` is accepted.'),
  SLUICE_MAX_BUS_LAG: int(2_000, 1).describe(
    "Uncommitted records per topic above which the edge sheds load (503 with Retry-After): bodies on the upload topics, blocks of up to 5,000 events on the events topic. 2,000 bodies is ~150 MB of plain or up to ~500 MB of gzip bodies waiting, ~25 s of plain uploads at 2 cores' pace. The backlog waits on disk, but the pages the consumers read count in the process's RSS: with 20,000, a 60 s overload at twice the sustainable rate reached 1.2 GB RSS without shedding anything.",
  ),
  SLUICE_MAX_BACKLOG_SECONDS: int(10, 0).describe(
    'The edge also sheds load (503 with Retry-After) when the oldest upload or event block the workers have not finished has waited longer than this: the backlog in time, whatever the bodies hold (local log only; on Kafka only `SLUICE_MAX_BUS_LAG` sheds). At twice the sustainable rate the backlog reaches it in ~10 s and takes about as long to clear. `0` turns it off.',
  ),
  SLUICE_UPLOAD_MAX_IN_FLIGHT_BYTES: int(64 * 1024 * 1024, 1).describe(
    'Upload bodies the edge holds at once, from before a body is read until it is on the durable log (a body without `Content-Length` counts as `SLUICE_UPLOAD_MAX_BYTES`); past it, 503 with Retry-After (`too many uploads in flight`). 64 MB is 256 uploads of the largest size or ~880 plain bodies of 250 events: it bounds the edge\'s share of the memory however many clients send at once (docs/events.md, "How the edge serves an upload").',
  ),
}

const profiles = {
  SLUICE_PROFILE_RATE_PER_KEY_PER_MIN: int(50_000, 1).describe(
    'Profile requests per minute per API key (429).',
  ),
  SLUICE_PROFILE_RATE_PER_CUSTOMER_PER_MIN: int(15, 1).describe(
    'Profile requests per minute per customer and profile db (429).',
  ),
}

const controlAndAudiences = {
  SLUICE_CONTROL_WAIT_MS: int(10_000, 1).describe(
    'How long an admin write waits for the control plane (a worker) to apply it; past it the answer is 503 with `Retry-After: 5`, and the write may still be applied (docs/control-plane.md).',
  ),
  SLUICE_AUDIENCE_REFRESH_SECONDS: int(3600, 1).describe(
    "How often the scheduler has every audience's counts computed again (the `audience-counts` job queues the requests; the audience counter pipeline counts).",
  ),
  SLUICE_AUDIENCE_COUNT_WAIT_MS: int(5_000, 0).describe(
    'How long an audience create, update or `POST …/segmentation` waits for its counts; past it the answer carries the last counts (0 and `null` times before the first) and the counting goes on (docs/audiences.md).',
  ),
}

const push = {
  SLUICE_PUSH_RATE_CUSTOMER_ID_PER_SECOND: int(1000, 1).describe(
    "Push requests to customer ids per app and second, per edge (the spec's limit; 429 with Retry-After; docs/push.md).",
  ),
  SLUICE_PUSH_RATE_BROADCAST_PER_MINUTE: int(2, 1).describe(
    'Broadcast push requests per app and minute, per edge.',
  ),
  SLUICE_PUSH_RATE_PROFILE_PER_HOUR: int(600, 1).describe(
    'Push requests to profiles per app and hour, per edge.',
  ),
  SLUICE_PUSH_RATE_AUDIENCE_ID_PER_MINUTE: int(2, 1).describe(
    'Push requests to audiences per app and minute, per edge.',
  ),
  SLUICE_PUSH_NEW_CAMPAIGN_KEYS_PER_DAY: int(100, 1).describe(
    "Campaign keys an app may use for the first time per 24 hours (429 beyond; the spec's limit).",
  ),
  SLUICE_PUSH_SEND_RATE_PER_APP: int(5000, 0).describe(
    "Deliveries per second handed to the transports for one app (bursts of one second's worth); `0`: no limit.",
  ),
  SLUICE_PUSH_BATCH_SIZE: int(5000, 1, 10_000).describe(
    'Installs per delivery batch: the most a crash of the push sender can send twice. A run of half a batch is one `push_deliveries` insert, whose fixed cost (a part) dominates below a few thousand rows: 5000 measured 29-34 us of CPU per delivery against 45-51 at 2000 (bench/README.md).',
  ),
  SLUICE_PUSH_MAX_ATTEMPTS: int(5, 1).describe(
    'Tries of a delivery a transport answers "retry" (429, 5xx, timeout) before it is recorded failed.',
  ),
  SLUICE_PUSH_RETRY_DEADLINE_MS: int(60_000, 0).describe(
    'How long the tries of one delivery may take before it is recorded failed.',
  ),
  SLUICE_APNS_URL: optionalUrl().describe(
    'An address replacing Apple\'s APNs host, for both environments (a proxy, a test\'s stand-in; docs/push.md, "Transports").',
  ),
  SLUICE_APNS_CA_FILE: optionalText('file path').describe(
    "A PEM file of certificates to trust at `SLUICE_APNS_URL` (a stand-in's self-signed one).",
  ),
  SLUICE_FCM_URL: z.url().default('https://fcm.googleapis.com').describe('FCM HTTP v1 endpoint.'),
  SLUICE_FCM_TOKEN_URL: z
    .url()
    .default('https://oauth2.googleapis.com/token')
    .describe("Google's OAuth2 token endpoint, for FCM."),
  SLUICE_PUSH_REQUEST_TIMEOUT_MS: int(10_000, 100).describe(
    'How long one APNs or FCM request may take before its delivery is retried.',
  ),
}

const query = {
  SLUICE_QUERY_MAX_EXECUTION_SECONDS: int(30, 1).describe(
    'Time limit of one Query API query, enforced by the engine (`max_execution_time`); no parameter lifts it (docs/query-api.md).',
  ),
  SLUICE_QUERY_MAX_MEMORY_BYTES: int(1024 * 1024 * 1024, 1).describe(
    'Memory limit of one Query API query (`max_memory_usage`).',
  ),
  SLUICE_QUERY_MAX_THREADS: int(1, 1).describe(
    'Engine threads per Query API query: fewer than the cores leaves CPU to the public APIs.',
  ),
  SLUICE_QUERY_MAX_CONCURRENT: int(2, 1).describe(
    'Query and Apps API reads running at once per edge; the others wait their turn.',
  ),
  SLUICE_QUERY_CONCURRENT_PER_KEY: int(1, 1).describe(
    'Query and Apps API requests one API key may have running at once (429 with Retry-After beyond).',
  ),
  SLUICE_QUERY_RATE_PER_KEY_PER_MIN: int(60, 1).describe(
    'Query and Apps API requests per API key per minute, both APIs together (429 with Retry-After).',
  ),
  SLUICE_QUERY_RATE_PER_KEY_PER_HOUR: int(150, 1).describe(
    'Query and Apps API requests per API key per hour (429).',
  ),
  SLUICE_QUERY_RATE_PER_KEY_PER_DAY: int(1000, 1).describe(
    'Query and Apps API requests per API key per day (429).',
  ),
}

const campaigns = {
  SLUICE_INAPP_MAX_REQUEST_BYTES: int(25 * 1024 * 1024, 1).describe(
    'In-app campaign create or update body limit (multipart; 413 at or above it, before parsing; docs/campaigns.md, "In-app assets").',
  ),
  SLUICE_INAPP_MAX_FILE_BYTES: int(5 * 1024 * 1024, 1).describe(
    'Largest in-app creative file (HTML or zip) as uploaded (422).',
  ),
  SLUICE_INAPP_MAX_UNZIPPED_BYTES: int(50 * 1024 * 1024, 1).describe(
    "Largest total of a creative zip's entries once inflated (422).",
  ),
  SLUICE_CAMPAIGN_TICK_MS: int(2000, 200).describe(
    'How often the campaign executor looks for occurrences to plan (up to a minute ahead of their start) and slots to dispatch (the `campaign-tick` job). A planned occurrence starting before the next tick is dispatched at its start (docs/campaigns.md, "Execution").',
  ),
  SLUICE_CAMPAIGN_PLAN_AHEAD_MS: int(60_000, 1000).describe(
    'How long before its start an occurrence is planned (its audience read, creatives and control assigned, slots made): longer for audiences whose plan takes longer (about 2 s a million installs on 2 cores); an edit before the first dispatch plans it again (docs/campaigns.md, "Execution").',
  ),
}

const memory = {
  MALLOC_ARENA_MAX: optionalText('integer').describe(
    'Read by glibc when the process starts, not by Sluice: how many malloc arenas the process\'s threads share (glibc\'s default is 8 per core, each grown in 64 MB heaps). `bin/sluice.js`, `npm start`, the Docker image and the bench set 2 unless it is set; Sluice started without it logs a warning (docs/memory.md, "Settings read when the process starts").',
  ),
  SLUICE_MALLOC_TRIM_INTERVAL_MS: int(10_000, 0).describe(
    'How often Sluice asks glibc (`malloc_trim(0)`, on libuv\'s pool) to hand freed heap pages back to the kernel, which it otherwise keeps at a burst\'s high-water mark; `0`: never. Linux with glibc only (docs/memory.md, "Giving freed heap pages back").',
  ),
  SLUICE_MEMORY_SOFT_LIMIT_MB: int(850, 0).describe(
    'A soft limit on resident memory, like Go\'s `GOMEMLIMIT`: while RSS is over it, V8 is made to collect sooner (CPU is spent only then). Set it ~150 MB under what the host or container allows; `0`: never (docs/memory.md, "A soft limit").',
  ),
}

export const configSchema = z.object({
  ...processes,
  ...security,
  ...busAndStore,
  ...retention,
  ...sqlPort,
  ...ingestion,
  ...profiles,
  ...controlAndAudiences,
  ...push,
  ...query,
  ...campaigns,
  ...exportConfig,
  ...memory,
})

/** The areas docs/configuration.md groups the settings in, in its order; each setting in one. */
export const configAreas: readonly { title: string; about: string; settings: Record<string, z.ZodType> }[] = [
  {
    title: 'Processes and ports',
    about: 'Where each process listens, keeps its data and logs, and how it stops.',
    settings: processes,
  },
  {
    title: 'Security',
    about: 'The admin token, HTTPS, and who may speak plain HTTP or fail authentication how often.',
    settings: security,
  },
  {
    title: 'Bus and store',
    about:
      'Set `KAFKA_BROKERS` and `CLICKHOUSE_URL` for distributed mode; unset, Sluice runs embedded on its local log and chdb.',
    settings: busAndStore,
  },
  {
    title: 'Retention',
    about:
      'How long the tables that grow with traffic keep their rows: a TTL per table that the migration step sets at start, in both modes (docs/scaling.md, "Retention per table").',
    settings: retention,
  },
  {
    title: 'SQL port',
    about: "The analysts' read-only port of embedded mode (docs/sql-port.md).",
    settings: sqlPort,
  },
  {
    title: 'Event ingestion',
    about: 'Upload limits, the accepted event times, and when the edge sheds load (docs/events.md).',
    settings: ingestion,
  },
  { title: 'Profiles', about: 'Rate limits of the profile store (docs/profiles.md).', settings: profiles },
  {
    title: 'Control plane and audiences',
    about: 'Admin writes and audience counts (docs/control-plane.md, docs/audiences.md).',
    settings: controlAndAudiences,
  },
  { title: 'Push', about: 'Request limits, delivery and transports (docs/push.md).', settings: push },
  {
    title: 'Query and Apps APIs',
    about: "The analysts' API: engine caps of each query and limits per API key (docs/query-api.md).",
    settings: query,
  },
  {
    title: 'Campaigns',
    about: 'In-app creatives and the campaign executor (docs/campaigns.md).',
    settings: campaigns,
  },
  { title: 'Exports', about: 'Export jobs, files and links (docs/exports.md).', settings: exportConfig },
  {
    title: 'Memory',
    about:
      "What bounds the process's resident memory (docs/memory.md). `JE_MALLOC_CONF`, read by chdb's allocator, is not Sluice's: `bin/sluice.js` sets `dirty_decay_ms:1000` unless it is set.",
    settings: memory,
  },
]

export type Config = z.infer<typeof configSchema>

export class ConfigError extends Error {
  override name = 'ConfigError'
}

/**
 * Parse the environment once, at start-up (unknown variables are ignored); throws a ConfigError
 * naming each bad variable, which the CLI prints before exiting with 78.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const result = configSchema.safeParse(env)
  if (result.success) {
    const { SLUICE_TLS_CERT: cert, SLUICE_TLS_KEY: key } = result.data
    if ((cert === undefined) !== (key === undefined))
      throw new ConfigError(
        'invalid configuration:\n  SLUICE_TLS_CERT and SLUICE_TLS_KEY: set both (PEM files) to serve HTTPS, or neither',
      )
    if (result.data.CLICKHOUSE_CLUSTER !== undefined && result.data.CLICKHOUSE_URL === undefined)
      throw new ConfigError(
        'invalid configuration:\n  CLICKHOUSE_CLUSTER: needs CLICKHOUSE_URL (a cluster is ClickHouse servers; the embedded engine is one node)',
      )
    return result.data
  }
  const lines = result.error.issues.map((issue) => {
    const name = issue.path.join('.')
    const value = env[name]
    return `${name}=${JSON.stringify(value ?? '')}: ${issue.message}`
  })
  throw new ConfigError(`invalid configuration:\n  ${lines.join('\n  ')}`)
}
