import { isIP } from 'node:net'
import { z } from 'zod'
import { exportConfig } from './exports-config.ts'

const int = (def: number, min = 0) => z.coerce.number().int().min(min).default(def)
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v))

const isAddressOrRange = (entry: string): boolean => {
  const [address = '', bits, extra] = entry.split('/')
  const family = isIP(address)
  if (family === 0 || extra !== undefined) return false
  return bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128))
}

/**
 * Every setting Sluice reads, parsed once at start-up. Unknown variables are ignored; a bad value
 * stops the process with a message naming the variable (see loadConfig).
 */
export const configSchema = z.object({
  PORT: int(8080, 0).pipe(z.number().max(65535)),
  HOST: z.string().default('0.0.0.0'),
  SLUICE_DATA_DIR: z.string().min(1).default('./data'),
  SLUICE_SQL_PORT: int(8123, 0).pipe(z.number().max(65535)),
  SLUICE_SQL_HOST: z.string().default('127.0.0.1'),
  // Limits of the analysts' SQL port, set on its engine connections with readonly=1 (no query lifts them).
  SLUICE_SQL_MAX_EXECUTION_SECONDS: int(60, 1),
  SLUICE_SQL_MAX_MEMORY_BYTES: int(1024 * 1024 * 1024, 1),
  SLUICE_SQL_MAX_RESULT_BYTES: int(128 * 1024 * 1024, 1),
  /** Engine threads per analyst statement: fewer than the cores leaves CPU to the public API. */
  SLUICE_SQL_MAX_THREADS: int(1, 1),
  SLUICE_SQL_MAX_CONCURRENT_QUERIES: int(2, 1),
  SLUICE_SQL_HEADERS_TIMEOUT_MS: int(10_000, 1),
  SLUICE_SQL_REQUEST_TIMEOUT_MS: int(30_000, 1),
  SLUICE_ADMIN_TOKEN: optionalString.pipe(z.string().min(16, 'must be at least 16 characters').optional()),
  SLUICE_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Read by glibc when the process starts, not by Sluice: only checked to be set (services/shared/process-memory.ts). */
  MALLOC_ARENA_MAX: optionalString,
  /** How often glibc is asked to give freed heap pages back (services/shared/malloc-trim.ts); 0: never. */
  SLUICE_MALLOC_TRIM_INTERVAL_MS: int(10_000, 0),
  /** Resident memory over which V8 is made to collect sooner (services/shared/memory-governor.ts); 0: never. */
  SLUICE_MEMORY_SOFT_LIMIT_MB: int(850, 0),
  KAFKA_BROKERS: optionalString.transform((v) =>
    v === undefined
      ? undefined
      : v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
  ),
  KAFKA_CLIENT_ID: z.string().default('sluice'),
  /** How long a dead worker holds its partitions before the group moves them (Kafka minimum: 6000). */
  KAFKA_SESSION_TIMEOUT_MS: int(30_000, 1000),
  SLUICE_TOPIC_PREFIX: z.string().default('sluice.'),
  /**
   * Partitions of the topics Sluice creates. Unset: 1 on the local log (one engine runs one query
   * at a time, so fewer, bigger batches win) and 8 on Kafka (spread over workers).
   */
  SLUICE_PARTITIONS: z.coerce.number().int().min(1).optional(),
  CLICKHOUSE_URL: optionalString.pipe(z.url().optional()),
  CLICKHOUSE_USER: z.string().default('default'),
  CLICKHOUSE_PASSWORD: z.string().default(''),
  CLICKHOUSE_DATABASE: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a plain identifier')
    .default('sluice'),
  // Limits named by the spec (all configurable).
  SLUICE_UPLOAD_MAX_BYTES: int(256 * 1024, 1),
  SLUICE_UPLOAD_MAX_DECOMPRESSED_BYTES: int(64 * 1024 * 1024, 1),
  SLUICE_UPLOAD_RATE_PER_KEY: int(150, 1),
  /** SDK upload requests per second per app key (many devices share one; per edge process). */
  SLUICE_SDK_UPLOAD_RATE_PER_APP: int(1000, 1),
  SLUICE_PROFILE_RATE_PER_KEY_PER_MIN: int(50_000, 1),
  SLUICE_PROFILE_RATE_PER_CUSTOMER_PER_MIN: int(15, 1),
  SLUICE_EXPORT_RATE_PER_KEY_PER_MIN: int(50, 1),
  /** Imports (docs/imports.md): a body as sent (413 at the limit), and a gzip body once inflated. */
  SLUICE_IMPORT_MAX_BYTES: int(1024 * 1024 * 1024, 1),
  SLUICE_IMPORT_MAX_INFLATED_BYTES: int(16 * 1024 * 1024 * 1024, 1),
  /** In-app campaigns (docs/campaigns.md, "In-app assets"): multipart body, one creative file, a zip once inflated. */
  SLUICE_INAPP_MAX_REQUEST_BYTES: int(25 * 1024 * 1024, 1),
  SLUICE_INAPP_MAX_FILE_BYTES: int(5 * 1024 * 1024, 1),
  SLUICE_INAPP_MAX_UNZIPPED_BYTES: int(50 * 1024 * 1024, 1),
  /** How often the campaign executor looks for due occurrences and slots (docs/campaigns.md, "Execution"). */
  SLUICE_CAMPAIGN_TICK_MS: int(2000, 200),
  // Push (docs/push.md): requests per app and target type (per edge), and the per-app send rate.
  SLUICE_PUSH_RATE_CUSTOMER_ID_PER_SECOND: int(1000, 1),
  SLUICE_PUSH_RATE_BROADCAST_PER_MINUTE: int(2, 1),
  SLUICE_PUSH_RATE_PROFILE_PER_HOUR: int(600, 1),
  SLUICE_PUSH_RATE_AUDIENCE_ID_PER_MINUTE: int(2, 1),
  SLUICE_PUSH_NEW_CAMPAIGN_KEYS_PER_DAY: int(100, 1),
  /** Deliveries per second handed to the transports for one app; 0: no limit. */
  SLUICE_PUSH_SEND_RATE_PER_APP: int(5000, 0),
  /**
   * Installs per delivery batch: the most a crash of the sender can send twice. A run of half a
   * batch is one push_deliveries insert, whose fixed cost (a part) dominates below a few thousand
   * rows: 5000 measured 29-34 us of CPU per delivery against 45-51 at 2000 (bench/README.md).
   */
  SLUICE_PUSH_BATCH_SIZE: int(5000, 1).pipe(z.number().max(10_000)),
  SLUICE_PUSH_MAX_ATTEMPTS: int(5, 1),
  SLUICE_PUSH_RETRY_DEADLINE_MS: int(60_000, 0),
  ...exportConfig,
  SLUICE_EVENT_PAST_WINDOW_HOURS: int(72, 0),
  SLUICE_EVENT_FUTURE_WINDOW_HOURS: int(48, 0),
  /** Uncommitted bus records per topic above which the edge answers 503 (bodies on upload topics, event blocks on the events topic). */
  SLUICE_MAX_BUS_LAG: int(2_000, 1),
  SLUICE_MAX_BACKLOG_SECONDS: int(10, 0),
  /** Bytes of upload bodies the edge holds at once (being received, checked or stored); past it, 503. */
  SLUICE_UPLOAD_MAX_IN_FLIGHT_BYTES: int(64 * 1024 * 1024, 1),
  /** Worker pipelines not to run (comma-separated names, e.g. `ingestion`): the bench's edge-only Sluice. */
  SLUICE_WORKER_SKIP_PIPELINES: z
    .string()
    .default('')
    .transform((s) =>
      s
        .split(',')
        .map((name) => name.trim())
        .filter(Boolean),
    ),
  SLUICE_WORKER_THREADS: int(0, 0),
  SLUICE_KEY_CACHE_SECONDS: int(5, 0),
  /** How long an admin write waits for the control plane to apply it before answering 503. */
  SLUICE_CONTROL_WAIT_MS: int(10_000, 1),
  /** How often the scheduler refreshes every audience's counts (the `audience-counts` job). */
  SLUICE_AUDIENCE_REFRESH_SECONDS: int(3600, 1),
  /** How long an audience create, update or recompute waits for its counts before answering without them. */
  SLUICE_AUDIENCE_COUNT_WAIT_MS: int(5_000, 0),
  /** Failed authentications per client address per minute before 429; 0: no limit. */
  SLUICE_AUTH_FAILURES_PER_ADDRESS_PER_MIN: int(600, 0),
  /** Proxies (addresses or CIDR ranges, comma-separated) whose X-Forwarded-For names the client. */
  SLUICE_TRUSTED_PROXIES: optionalString.pipe(
    z
      .string()
      .optional()
      .transform((v) =>
        (v ?? '')
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      )
      .refine((entries) => entries.every(isAddressOrRange), 'must be IP addresses or CIDR ranges'),
  ),
  /** Push transports (docs/push.md "Transports"): Apple's and Google's addresses, overridable for proxies and tests. */
  SLUICE_APNS_URL: optionalString.pipe(z.url().optional()),
  /** A PEM file of certificates to trust at SLUICE_APNS_URL (a stand-in's self-signed one). */
  SLUICE_APNS_CA_FILE: optionalString,
  SLUICE_FCM_URL: z.url().default('https://fcm.googleapis.com'),
  SLUICE_FCM_TOKEN_URL: z.url().default('https://oauth2.googleapis.com/token'),
  /** How long one APNs or FCM request may take before its delivery is retried. */
  SLUICE_PUSH_REQUEST_TIMEOUT_MS: int(10_000, 100),
  SLUICE_SHUTDOWN_TIMEOUT_MS: int(15_000, 0),
  /** PEM files of the edge's certificate and key: set both to serve HTTPS (and HTTP/2 by ALPN). */
  SLUICE_TLS_CERT: optionalString,
  SLUICE_TLS_KEY: optionalString,
  /** Answer plain HTTP from any address, not only loopback and trusted proxies (private networks, tests). */
  /** Health, readiness and metrics of a process that runs no edge (`sluice worker`, `sluice scheduler`). */
  SLUICE_OPS_PORT: z.coerce.number().int().min(0).max(65535).default(9464),
  SLUICE_OPS_HOST: z.string().default('0.0.0.0'),
  SLUICE_ALLOW_PLAIN_HTTP: optionalString.pipe(
    z
      .enum(['0', '1', 'false', 'true'], { error: 'must be 1, 0, true or false' })
      .optional()
      .transform((v) => v === '1' || v === 'true'),
  ),
})

export type Config = z.infer<typeof configSchema>

export class ConfigError extends Error {
  override name = 'ConfigError'
}

/** Parse the environment; throws a ConfigError naming each bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const result = configSchema.safeParse(env)
  if (result.success) {
    const { SLUICE_TLS_CERT: cert, SLUICE_TLS_KEY: key } = result.data
    if ((cert === undefined) !== (key === undefined))
      throw new ConfigError(
        'invalid configuration:\n  SLUICE_TLS_CERT and SLUICE_TLS_KEY: set both (PEM files) to serve HTTPS, or neither',
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
