/**
 * The SQL port: ClickHouse's HTTP interface, close enough that @clickhouse/client, curl, Grafana and
 * DBeaver work against it. Read-only mode is the analysts' port in embedded mode: statements run on
 * connections of their own (analyst-engine.ts) with the engine's readonly=1 and the port's limits, at
 * most `maxConcurrentQueries` at a time, and a statement whose client goes away is killed
 * (read-only-execution.ts). Writable mode is the test stand-in for a ClickHouse server
 * (test/fixtures/clickhouse-standin-server.ts): it runs requests one at a time on the executor's
 * connection (writable-execution.ts). This module starts and stops the server; request-handler.ts
 * answers each request.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { RawExecutor } from '../../pipelines/connectors/store/store.ts'
import type { Logger } from '../shared/logger.ts'
import type { AnalystEngine } from './analyst-engine.ts'
import type { Authenticate } from './authentication.ts'
import type { ServerIdentity } from './http-answers.ts'
import { ReadOnlyExecution } from './read-only-execution.ts'
import { RequestHandler } from './request-handler.ts'
import type { StatementExecution } from './statement-execution.ts'
import { WritableExecution } from './writable-execution.ts'

interface SqlPortCommonOptions {
  /** Writable mode runs every statement here; read-only mode only reads the engine's version and time zone. */
  executor: RawExecutor
  host: string
  /** 0 picks a free port. */
  port: number
  authenticate: Authenticate
  /** The process logger: refusals and failed statements at info, broken requests at warn. */
  logger?: Pick<Logger, 'info' | 'warn'>
  /** The database a request runs in unless it names another (the executor's current one in writable mode). */
  defaultDatabase: string
  /** Largest accepted request body, before and after decompression. Default 1 MB read-only, 256 MB writable. */
  maxQueryBytes?: number
  /** Requests running or waiting for the engine before new ones get TOO_MANY_SIMULTANEOUS_QUERIES. Default 100. */
  maxQueuedRequests?: number
  /** A connection that has not sent its whole header block within this time is answered 408 and closed. Default 10 s (writable: 60 s). */
  headersTimeoutMs?: number
  /** A connection that has not sent its whole request (headers and body) within this time is answered 408 and closed. Default 30 s (writable: 300 s). */
  requestTimeoutMs?: number
  /** Reported in error bodies; read from the engine (SELECT version()) when absent. */
  serverVersion?: string
  /** X-ClickHouse-Timezone; read from the engine (SELECT timezone()) when absent. */
  timezone?: string
  displayName?: string
}

export type SqlPortOptions = SqlPortCommonOptions &
  (
    | {
        readOnly: true
        /** Runs the analysts' statements: connections of their own, readonly=1, the limits. */
        analysts: AnalystEngine
        /** Statements running at once; the others wait in arrival order. Default 2. */
        maxConcurrentQueries?: number
      }
    | { readOnly: false }
  )

export interface SqlPortServer {
  port: number
  close(): Promise<void>
}

const MB = 1024 * 1024

/** Starts the port on host:port; resolves once it listens. */
export async function startSqlPort(options: SqlPortOptions): Promise<SqlPortServer> {
  const info =
    options.serverVersion === undefined || options.timezone === undefined
      ? await readServerInfo(options.executor)
      : undefined
  const execution = executionFor(options)
  const handler = new RequestHandler({
    execution,
    authenticate: options.authenticate,
    logger: options.logger,
    maxBodyBytes: options.maxQueryBytes ?? (options.readOnly ? MB : 256 * MB),
    server: serverIdentity(options, info),
  })
  // Writable (the test stand-in, taking bodies up to 256 MB) keeps Node's own defaults.
  const requestTimeout = options.requestTimeoutMs ?? (options.readOnly ? 30_000 : 300_000)
  const headersTimeout = Math.min(
    options.headersTimeoutMs ?? (options.readOnly ? 10_000 : 60_000),
    requestTimeout,
  )
  // Node looks for connections past these limits every connectionsCheckingInterval (30 s by default).
  const httpServer = createServer(
    {
      headersTimeout,
      requestTimeout,
      // Writable (the stand-in): a ClickHouse server reads URIs up to `http_max_uri_size` (1 MiB),
      // and clients send query parameters in the URI: the events writer's look-up of a block's
      // 5,000 uuids is ~200 KB of it. Node's 16 KB default closed such requests with no answer,
      // which the writer took for a poison block and dead-lettered.
      ...(options.readOnly ? {} : { maxHeaderSize: MB }),
      connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(headersTimeout / 4))),
    },
    handler.listener,
  )
  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject)
    httpServer.listen(options.port, options.host, () => {
      httpServer.off('error', reject)
      resolve()
    })
  })
  const { port: listening } = httpServer.address() as AddressInfo
  return {
    port: listening,
    close: () =>
      new Promise<void>((resolve, reject) => {
        httpServer.close((err) => {
          execution.close?.()
          if (err) reject(err)
          else resolve()
        })
        httpServer.closeIdleConnections()
        // An analyst's statement is not worth holding a shutdown for: it is killed, its client
        // gets a closed connection. The writable stand-in lets requests in flight finish.
        if (options.readOnly) {
          handler.abortAll()
          httpServer.closeAllConnections()
        }
      }),
  }
}

function executionFor(options: SqlPortOptions): StatementExecution {
  return options.readOnly
    ? new ReadOnlyExecution(options.analysts, {
        defaultDatabase: options.defaultDatabase,
        maxConcurrentQueries: options.maxConcurrentQueries,
        maxQueuedRequests: options.maxQueuedRequests,
      })
    : new WritableExecution(options.executor, {
        defaultDatabase: options.defaultDatabase,
        maxQueuedRequests: options.maxQueuedRequests,
      })
}

/** The version and time zone given, else those the engine told (`info`), else read again later. */
function serverIdentity(options: SqlPortOptions, info: ServerInfo | undefined): ServerIdentity {
  const version = options.serverVersion ?? info?.version
  const timezone = options.timezone ?? info?.timezone
  const server: ServerIdentity = {
    displayName: options.displayName ?? 'sluice-chdb',
    version: version ?? 'unknown',
    timezone: timezone ?? 'UTC',
  }
  // Read once in the background: an answer never waits for it behind a long query.
  if (version === undefined || timezone === undefined) {
    void readServerInfo(options.executor).then((read) => {
      server.version = version ?? read?.version ?? server.version
      server.timezone = timezone ?? read?.timezone ?? server.timezone
    })
  }
  return server
}

/** The engine's version and time zone, for error bodies and X-ClickHouse-Timezone. */
async function readServerInfo(executor: RawExecutor): Promise<ServerInfo | undefined> {
  try {
    const out = await executor.exec('SELECT version(), timezone()', { format: 'TabSeparated' })
    const [version, timezone] = out.toString('utf8').trim().split('\t')
    return version && timezone ? { version, timezone } : undefined
  } catch {
    return undefined
  }
}

interface ServerInfo {
  version: string
  timezone: string
}
