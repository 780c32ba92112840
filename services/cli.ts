import { parseArgs } from 'node:util'
import { resolve } from 'node:path'
import { readStoredToken } from './admin-token.ts'
import { PUSH_TRANSPORT_OPTIONS, PUSH_TRANSPORT_USAGE, pushTransportRequest } from './cli-push-transport.ts'
import { ConfigError, loadConfig, type Config } from './config.ts'
import { EXPORT_CLI_OPTIONS, EXPORT_CLI_USAGE, exportAdminRequest } from './cli-exports.ts'
import {
  IMPORT_CLI_OPTIONS,
  IMPORT_CLI_USAGE,
  importRequest,
  ImportUsageError,
  runImport,
} from './cli-import.ts'
import { currentNodeFlags, processMemoryWarning } from './shared/process-memory.ts'
import type { Role } from './topology.ts'
import type { Logger } from './shared/logger.ts'
import type { MallocTrimmer } from './shared/malloc-trim.ts'
import type { MemoryGovernor } from './shared/memory-governor.ts'

// The engine (chdb), the bus and the logger are imported by the commands that run them, so
// `sluice admin`, an HTTP client, starts without loading ClickHouse into the process.

const USAGE = `usage: sluice <command>

  start                 edge + workers + scheduler in one process (embedded by default)
  edge | worker | scheduler
                        one role, for distributed mode (KAFKA_BROKERS and CLICKHOUSE_URL)
  migrate               apply ClickHouse migrations and exit
  admin <resource> <action> [--flags]
                        client of the admin API (prints JSON):
    admin orgs create --name NAME        admin orgs list
    admin apps create --org ID --name NAME [--app-id KEY]
    admin apps list --org ID
    admin apps set --app-id KEY [--time-zone ZONE] [--icon-url URL] [--label custom_N_dimension=LABEL ...]
                                         (Apps and Query APIs: day boundaries, icon, custom dimension labels;
                                          --label custom_N_dimension= removes a label)
    admin keys create --org ID [--scopes profiles,events,...]
    admin keys list --org ID             admin keys revoke --org ID --key API_KEY
    admin jobs list                      (latest run of each scheduled job)
    admin dead-letters list [--stage STAGE] [--limit N]
    admin dead-letters replay --id ID
${PUSH_TRANSPORT_USAGE}${EXPORT_CLI_USAGE}    (--url defaults to SLUICE_URL or http://127.0.0.1:$PORT; the token to
     SLUICE_ADMIN_TOKEN or the one stored in $SLUICE_DATA_DIR)
${IMPORT_CLI_USAGE}`

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(USAGE)
    return command ? 0 : 2
  }
  const config = loadConfigOrExit()
  switch (command) {
    case 'start':
      return runRoles(config, ['edge', 'worker', 'scheduler'], false)
    case 'edge':
    case 'worker':
    case 'scheduler':
      return runRoles(config, [command], true)
    case 'migrate':
      return runMigrate(config)
    case 'admin':
      return runAdmin(config, rest)
    case 'import':
      return runImportCommand(config, rest)
    default:
      process.stderr.write(`unknown command: ${command}\n\n${USAGE}`)
      return 2
  }
}

function loadConfigOrExit(): Config {
  try {
    return loadConfig()
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`sluice: ${err.message}\n`)
      process.exit(78)
    }
    throw err
  }
}

async function runRoles(config: Config, roles: Role[], distributed: boolean): Promise<number> {
  if (distributed && (!config.KAFKA_BROKERS || !config.CLICKHOUSE_URL)) {
    process.stderr.write(
      `sluice ${roles.join(',')}: distributed mode needs KAFKA_BROKERS and CLICKHOUSE_URL\n`,
    )
    return 78
  }
  const [{ createLogger }, { startProcess }] = await Promise.all([
    import('./shared/logger.ts'),
    import('./processes.ts'),
  ])
  const logger = createLogger(config.SLUICE_LOG_LEVEL)
  const memoryWarning = processMemoryWarning(config.MALLOC_ARENA_MAX, currentNodeFlags())
  if (memoryWarning) logger.warn(memoryWarning)
  const running = await startProcess(config, logger, roles)
  const trimmer = await startTrimmer(config, logger)
  const governor = await startGovernor(config, logger)
  const banner = [`sluice ${roles.join('+')} running (${running.runtime.mode} mode)`]
  if (running.url) banner.push(`  API:       ${running.url}`)
  if (running.opsPort !== undefined)
    banner.push(
      `  ops:       http://${config.SLUICE_OPS_HOST === '0.0.0.0' ? '127.0.0.1' : config.SLUICE_OPS_HOST}:${running.opsPort} (/healthz, /readyz, /metrics)`,
    )
  if (running.sqlPort !== undefined)
    banner.push(
      `  SQL port:  http://${config.SLUICE_SQL_HOST}:${running.sqlPort} (user admin, password = admin token)`,
    )
  if (running.adminTokenGenerated && running.adminToken)
    banner.push(
      `  admin token (generated, stored in ${resolve(config.SLUICE_DATA_DIR, 'admin-token')}; shown once): ${running.adminToken}`,
    )
  banner.push(`  data:      ${running.runtime.dataDir}`)
  // Listening for the signals before the banner: whoever waits for it to send SIGTERM must not
  // find node's default action (killed, no shutdown) still in place for a moment after it.
  const signalled = new Promise<void>((resolveSignal) => {
    const onSignal = (signal: NodeJS.Signals) => {
      logger.info({ signal }, 'shutting down')
      resolveSignal()
    }
    process.once('SIGTERM', onSignal)
    process.once('SIGINT', onSignal)
  })
  process.stdout.write(banner.join('\n') + '\n')
  await signalled
  const timer = setTimeout(() => {
    logger.error('graceful shutdown timed out; exiting')
    process.exit(1)
  }, config.SLUICE_SHUTDOWN_TIMEOUT_MS)
  timer.unref()
  await running.shutdown()
  await trimmer?.stop()
  governor?.stop()
  logger.info('stopped')
  return 0
}

async function startTrimmer(config: Config, logger: Logger): Promise<MallocTrimmer | undefined> {
  if (config.SLUICE_MALLOC_TRIM_INTERVAL_MS === 0) return undefined
  const { loadMallocTrim, startMallocTrimmer } = await import('./shared/malloc-trim.ts')
  const trim = await loadMallocTrim().catch((err: unknown) => {
    logger.warn({ err }, 'malloc_trim unavailable: freed heap pages stay resident until reused')
    return undefined
  })
  if (!trim) return undefined
  return startMallocTrimmer(trim, config.SLUICE_MALLOC_TRIM_INTERVAL_MS, (err) =>
    logger.warn({ err }, 'malloc_trim failed'),
  )
}

/**
 * How often the memory governor reads RSS: the peaks it acts on are bursts of a second or two (an
 * insert and a merge in the engine at once, a batch's garbage on the main thread).
 */
const GOVERNOR_INTERVAL_MS = 500

async function startGovernor(config: Config, logger: Logger): Promise<MemoryGovernor | undefined> {
  if (config.SLUICE_MEMORY_SOFT_LIMIT_MB === 0) return undefined
  const { concurrentCollector, setHeapGrowingPercent, startMemoryGovernor } =
    await import('./shared/memory-governor.ts')
  const collect = concurrentCollector()
  return startMemoryGovernor({
    softLimitBytes: config.SLUICE_MEMORY_SOFT_LIMIT_MB * 1024 * 1024,
    intervalMs: GOVERNOR_INTERVAL_MS,
    readRss: () => process.memoryUsage.rss(),
    setGrowingPercent: setHeapGrowingPercent,
    ...(collect ? { collect } : {}),
    onChange: (engaged, rss) =>
      logger.debug(
        { rssMb: Math.round(rss / 1048576), softLimitMb: config.SLUICE_MEMORY_SOFT_LIMIT_MB },
        engaged ? 'over the memory soft limit: V8 collects sooner' : 'back under the memory soft limit',
      ),
  })
}

async function runMigrate(config: Config): Promise<number> {
  const [{ openStore, migrateOptions }, { migrate }] = await Promise.all([
    import('./runtime.ts'),
    import('../pipelines/connectors/store/migrations.ts'),
  ])
  const store = await openStore(config, resolve(config.SLUICE_DATA_DIR))
  try {
    const result = await migrate(store, undefined, migrateOptions(config))
    process.stdout.write(JSON.stringify(result) + '\n')
    return 0
  } finally {
    await store.close()
  }
}

function parseAdminArgs(args: string[]) {
  return parseArgs({
    args,
    allowPositionals: true,
    options: {
      url: { type: 'string' },
      token: { type: 'string' },
      org: { type: 'string' },
      name: { type: 'string' },
      'app-id': { type: 'string' },
      scopes: { type: 'string' },
      key: { type: 'string' },
      stage: { type: 'string' },
      limit: { type: 'string' },
      id: { type: 'string' },
      'time-zone': { type: 'string' },
      'icon-url': { type: 'string' },
      label: { type: 'string', multiple: true },
      ...PUSH_TRANSPORT_OPTIONS,
      ...EXPORT_CLI_OPTIONS,
    },
  })
}

async function runAdmin(config: Config, args: string[]): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(USAGE)
    return 0
  }
  let parsed: ReturnType<typeof parseAdminArgs>
  try {
    parsed = parseAdminArgs(args)
  } catch (err) {
    // An unknown flag or a flag without its value: say which, as for any other usage error.
    if (err instanceof TypeError && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`sluice admin: ${err.message}\n\n${USAGE}`)
      return 2
    }
    throw err
  }
  const { positionals, values } = parsed
  const [resource, action] = positionals
  const base = values.url ?? config.SLUICE_URL ?? `http://127.0.0.1:${config.PORT}`
  const token =
    values.token ?? config.SLUICE_ADMIN_TOKEN ?? (await readStoredToken(resolve(config.SLUICE_DATA_DIR)))
  const need = (name: 'org' | 'name' | 'key' | 'id'): string => {
    const value = values[name]
    if (!value) throw new UsageError(`--${name} is required`)
    return value
  }
  let request: { method: string; path: string; body?: unknown }
  try {
    request =
      resource === 'push-transport'
        ? pushTransportRequest(action, values, (message) => new UsageError(message))
        : resource === 'exports'
          ? (exportAdminRequest(action, values, (flag) => {
              throw new UsageError(`--${flag} is required`)
            }) ?? adminRequest(resource, action, need, values))
          : adminRequest(resource, action, need, values)
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`sluice admin: ${err.message}\n\n${USAGE}`)
      return 2
    }
    throw err
  }
  const response = await fetch(new URL(`/admin/v1${request.path}`, base), {
    method: request.method,
    headers: { Authorization: `Bearer ${token ?? ''}`, 'Content-Type': 'application/json' },
    body: request.body === undefined ? undefined : JSON.stringify(request.body),
  })
  const text = await response.text()
  process.stdout.write((text === '' ? JSON.stringify({ status: response.status }) : text) + '\n')
  return response.ok ? 0 : 1
}

class UsageError extends Error {}

async function runImportCommand(config: Config, args: string[]): Promise<number> {
  let parsed
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        url: { type: 'string' },
        org: { type: 'string' },
        name: { type: 'string' },
        ...IMPORT_CLI_OPTIONS,
      },
    })
  } catch (err) {
    process.stderr.write(`sluice import: ${(err as Error).message}\n\n${USAGE}`)
    return 2
  }
  const { positionals, values } = parsed
  const key = values.key ?? config.SLUICE_API_KEY
  const secret = values.secret ?? config.SLUICE_API_SECRET
  let request
  try {
    if (!key || !secret)
      throw new ImportUsageError('--key and --secret (or SLUICE_API_KEY and SLUICE_API_SECRET) are required')
    request = importRequest(positionals[0], positionals[1], values)
  } catch (err) {
    if (!(err instanceof ImportUsageError)) throw err
    process.stderr.write(`sluice import: ${err.message}\n\n${USAGE}`)
    return 2
  }
  const base = values.url ?? config.SLUICE_URL ?? `http://127.0.0.1:${config.PORT}`
  const auth = `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`
  const outcome = await runImport(base, auth, request, values.quiet ?? !process.stderr.isTTY)
  process.stdout.write(JSON.stringify(outcome.output, null, 2) + '\n')
  return outcome.ok ? 0 : 1
}

function needAppId(values: { 'app-id'?: string }): string {
  if (!values['app-id']) throw new UsageError('--app-id is required')
  return values['app-id']
}

/** `--label custom_0_dimension=Blood Type` (empty after `=`: remove the label). */
function appSettingsBody(values: { 'time-zone'?: string; 'icon-url'?: string; label?: string[] }) {
  const labels: Record<string, string | null> = {}
  for (const entry of values.label ?? []) {
    const eq = entry.indexOf('=')
    if (eq <= 0) throw new UsageError(`--label ${entry}: expected custom_N_dimension=LABEL`)
    const label = entry.slice(eq + 1)
    labels[entry.slice(0, eq)] = label === '' ? null : label
  }
  return {
    ...(values['time-zone'] !== undefined && { time_zone: values['time-zone'] }),
    ...(values['icon-url'] !== undefined && { icon_url: values['icon-url'] }),
    ...(Object.keys(labels).length > 0 && { custom_dimensions: labels }),
  }
}

function adminRequest(
  resource: string | undefined,
  action: string | undefined,
  need: (name: 'org' | 'name' | 'key' | 'id') => string,
  values: {
    'app-id'?: string
    scopes?: string
    stage?: string
    limit?: string
    'time-zone'?: string
    'icon-url'?: string
    label?: string[]
  },
): { method: string; path: string; body?: unknown } {
  const org = () => encodeURIComponent(need('org'))
  switch (`${resource} ${action}`) {
    case 'orgs create':
      return { method: 'POST', path: '/orgs', body: { name: need('name') } }
    case 'orgs list':
      return { method: 'GET', path: '/orgs' }
    case 'apps create':
      return {
        method: 'POST',
        path: `/orgs/${org()}/apps`,
        body: { name: need('name'), ...(values['app-id'] ? { app_id: values['app-id'] } : {}) },
      }
    case 'apps list':
      return { method: 'GET', path: `/orgs/${org()}/apps` }
    case 'apps set':
      return {
        method: 'PUT',
        path: `/apps/${encodeURIComponent(needAppId(values))}/settings`,
        body: appSettingsBody(values),
      }
    case 'keys create':
      return {
        method: 'POST',
        path: `/orgs/${org()}/keys`,
        body: values.scopes ? { scopes: values.scopes.split(',').map((s) => s.trim()) } : {},
      }
    case 'keys list':
      return { method: 'GET', path: `/orgs/${org()}/keys` }
    case 'keys revoke':
      return { method: 'DELETE', path: `/orgs/${org()}/keys/${encodeURIComponent(need('key'))}` }
    case 'jobs list':
      return { method: 'GET', path: '/jobs' }
    case 'dead-letters list': {
      const query = new URLSearchParams()
      if (values.stage) query.set('stage', values.stage)
      if (values.limit) query.set('limit', values.limit)
      return { method: 'GET', path: `/dead-letters${query.size > 0 ? `?${query.toString()}` : ''}` }
    }
    case 'dead-letters replay':
      return { method: 'POST', path: `/dead-letters/${encodeURIComponent(need('id'))}/replay` }
    default:
      throw new UsageError(`unknown admin command: ${resource ?? ''} ${action ?? ''}`)
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`sluice: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
    process.exit(1)
  },
)
