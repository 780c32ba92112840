/**
 * The SQL port: ClickHouse's HTTP interface, close enough that @clickhouse/client, curl, Grafana and
 * DBeaver work against it. Read-only mode is the analysts' port in embedded mode: statements run on
 * connections of their own (analyst-engine.ts) with the engine's readonly=1 and the port's limits, at
 * most `maxConcurrentQueries` at a time, and a statement whose client goes away is killed. Writable
 * mode is the test stand-in for a ClickHouse server (test/fixtures/clickhouse-standin-server.ts): it
 * runs requests one at a time on the executor's connection, where a `database=` switch is
 * `USE db; …; USE default` as one call; nothing else shares that process's engine.
 */
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { promisify } from 'node:util'
import zlib from 'node:zlib'
import type { QueryParams, RawExecutor } from '../../pipelines/connectors/store/store.ts'
import { AnalystQueryCancelled, ReadOnlyRefusal, type AnalystEngine } from './analyst-engine.ts'
import { ConcurrencyLimit, WaitCancelled } from './concurrency-limit.ts'
import {
  addSettings,
  analyzeStatement,
  isValidSettingName,
  queryParameterTypes,
  type SettingValue,
  type StatementAnalysis,
} from './sql-lexer.ts'
import {
  contentTypeFor,
  decodeQueryParameter,
  ErrorCode,
  errorBody,
  fromEngineError,
  httpStatusForCode,
  isBinaryFormat,
  isDeniedReadOnlySetting,
  isFormatName,
  isIdentifier,
  READ_ONLY_KINDS,
  readOnlyRefusal,
  SETTINGS_KINDS,
  splitHttpParams,
  SqlPortError,
} from './clickhouse-protocol.ts'
import type { Logger } from '../shared/logger.ts'

interface SqlPortCommonOptions {
  /** Writable mode runs every statement here; read-only mode only reads the engine's version and time zone. */
  executor: RawExecutor
  host: string
  /** 0 picks a free port. */
  port: number
  authenticate(user: string, password: string): boolean
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

export type SqlPortHandlerOptions = DistributiveOmit<SqlPortOptions, 'host' | 'port'>
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never

export interface SqlPortServer {
  port: number
  close(): Promise<void>
}

const MB = 1024 * 1024
const gzip = promisify(zlib.gzip)
const deflate = promisify(zlib.deflate)
const brotli = promisify(zlib.brotliCompress)

/** Node request listener speaking ClickHouse's HTTP interface. */
export function createSqlPortHandler(
  options: SqlPortHandlerOptions,
): (req: IncomingMessage, res: ServerResponse) => void {
  return new SqlPort(options).listener
}

/** Starts the port on host:port; resolves once it listens. */
export async function startSqlPort(options: SqlPortOptions): Promise<SqlPortServer> {
  const info =
    options.serverVersion === undefined || options.timezone === undefined
      ? await readServerInfo(options.executor)
      : undefined
  const port = new SqlPort({
    ...options,
    serverVersion: options.serverVersion ?? info?.version,
    timezone: options.timezone ?? info?.timezone,
  })
  // Writable (the test stand-in, taking bodies up to 256 MB) keeps Node's own defaults.
  const requestTimeout = options.requestTimeoutMs ?? (options.readOnly ? 30_000 : 300_000)
  const headersTimeout = Math.min(
    options.headersTimeoutMs ?? (options.readOnly ? 10_000 : 60_000),
    requestTimeout,
  )
  // Node looks for connections past these limits every connectionsCheckingInterval (30 s by default).
  const server = createServer(
    {
      headersTimeout,
      requestTimeout,
      connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(headersTimeout / 4))),
    },
    port.listener,
  )
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, options.host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const { port: listening } = server.address() as AddressInfo
  return {
    port: listening,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()))
        server.closeIdleConnections()
        // An analyst's statement is not worth holding a shutdown for: it is killed, its client
        // gets a closed connection. The writable stand-in lets requests in flight finish.
        if (options.readOnly) {
          port.abortAll()
          server.closeAllConnections()
        }
      }),
  }
}

/**
 * `authenticate` over a fixed user table. Passwords are compared as SHA-256 digests with
 * timingSafeEqual, so neither their length nor their content shows in the timing.
 */
export function passwordAuthenticator(
  users: Readonly<Record<string, string>>,
): (user: string, password: string) => boolean {
  const digests = new Map(Object.entries(users).map(([user, password]) => [user, sha256(password)]))
  const decoy = sha256(randomBytes(32).toString('hex'))
  return (user, password) => {
    const expected = digests.get(user)
    const same = timingSafeEqual(sha256(password), expected ?? decoy)
    return expected !== undefined && same
  }
}

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest()

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

class SqlPort {
  private readonly options: SqlPortHandlerOptions
  private readonly maxBytes: number
  /** Writable mode: one request at a time on the executor's connection. */
  private readonly queue = new SerialQueue()
  /** Read-only mode: at most maxConcurrentQueries statements at once. */
  private readonly limiter: ConcurrencyLimit
  /** Requests in flight, aborted when the port closes. */
  private readonly inFlight = new Set<AbortController>()
  private readonly displayName: string
  private info: ServerInfo
  readonly listener: (req: IncomingMessage, res: ServerResponse) => void

  constructor(options: SqlPortHandlerOptions) {
    if (!isIdentifier(options.defaultDatabase))
      throw new Error(`invalid defaultDatabase ${options.defaultDatabase}`)
    if (options.readOnly && !options.analysts)
      throw new Error('a read-only SQL port needs its analyst engine')
    this.options = options
    this.limiter = new ConcurrencyLimit(options.readOnly ? (options.maxConcurrentQueries ?? 2) : 1)
    this.listener = (req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        // handle() answers every error it can; this is the last resort for a broken socket.
        this.options.logger?.warn({ err, component: 'sql-port' }, 'SQL port request failed')
        if (!res.headersSent) res.writeHead(500).end()
        else res.destroy(err instanceof Error ? err : undefined)
      })
    }
    this.maxBytes = options.maxQueryBytes ?? (options.readOnly ? MB : 256 * MB)
    this.displayName = options.displayName ?? 'sluice-chdb'
    this.info = { version: options.serverVersion ?? 'unknown', timezone: options.timezone ?? 'UTC' }
    // Read once in the background: an answer never waits for it behind a long query.
    if (options.serverVersion === undefined || options.timezone === undefined) {
      void readServerInfo(options.executor).then((info) => {
        this.info = {
          version: options.serverVersion ?? info?.version ?? this.info.version,
          timezone: options.timezone ?? info?.timezone ?? this.info.timezone,
        }
      })
    }
  }

  /** Cancels every request in flight (their statements are killed). */
  abortAll(): void {
    for (const controller of this.inFlight) controller.abort()
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // The response closing before it was all written means the client has gone.
    const abort = new AbortController()
    this.inFlight.add(abort)
    res.once('close', () => {
      this.inFlight.delete(abort)
      if (!res.writableFinished) abort.abort()
    })
    const started = process.hrtime.bigint()
    const url = new URL(req.url ?? '/', 'http://localhost')
    const method = req.method ?? 'GET'
    let queryId = headerSafe(url.searchParams.get('query_id')) ?? randomUUID()
    // Whether the request body has been read (or there is none to read) when an error is answered.
    let drained = method === 'GET' || method === 'HEAD'
    if (drained) req.resume()
    let user: string | undefined
    try {
      if (url.pathname === '/ping' || url.pathname === '/replicas_status') {
        if (method !== 'GET' && method !== 'HEAD')
          throw new SqlPortError(ErrorCode.NOT_IMPLEMENTED, `${method} is not supported here`)
        return this.sendOk(req, res)
      }
      if (method !== 'GET' && method !== 'POST' && method !== 'HEAD') {
        throw new SqlPortError(ErrorCode.NOT_IMPLEMENTED, `HTTP method ${method} is not supported`)
      }
      const isPost = method === 'POST'
      if (!isPost && !url.searchParams.has('query')) {
        if (url.pathname === '/') return this.sendOk(req, res)
        return this.sendNotFound(req, res, url.pathname)
      }

      user = this.authenticate(req.headers, url.searchParams)

      let entries: [string, string][] = [...url.searchParams]
      let body = isPost ? await readBody(req, this.maxBytes) : Buffer.alloc(0)
      drained = true
      const contentType = req.headers['content-type'] ?? ''
      if (isPost && /^multipart\/form-data/i.test(contentType)) {
        entries = [...entries, ...parseMultipart(body, contentType)]
        body = Buffer.alloc(0)
      }
      const http = splitHttpParams(entries)
      queryId = headerSafe(http.queryId) ?? queryId

      const result = await this.execute(http, body, {
        isPost,
        user,
        headers: req.headers,
        signal: abort.signal,
      })
      const elapsedNs = process.hrtime.bigint() - started
      await this.sendResult(req, res, result, queryId, elapsedNs, http)
    } catch (err) {
      if (abort.signal.aborted || res.destroyed) return
      const portError = this.portError(err, user)
      // An analyst's refused or failing statement is not a fault of Sluice: info, with its code.
      this.options.logger?.info(
        { component: 'sql-port', query_id: queryId, user, code: portError.code, type: portError.type },
        portError.message,
      )
      this.sendError(req, res, portError, queryId, drained)
    }
  }

  private portError(err: unknown, user: string | undefined): SqlPortError {
    if (err instanceof ReadOnlyRefusal) {
      return new SqlPortError(
        ErrorCode.READONLY,
        `${user ?? 'default'}: Cannot execute query in readonly mode: ${err.why}`,
      )
    }
    if (err instanceof AnalystQueryCancelled || err instanceof WaitCancelled)
      return new SqlPortError(ErrorCode.QUERY_WAS_CANCELLED, err.message)
    return fromEngineError(err)
  }

  private authenticate(headers: IncomingHttpHeaders, params: URLSearchParams): string {
    const { user, password } = credentialsOf(headers, params)
    if (!this.options.authenticate(user, password)) {
      throw new SqlPortError(
        ErrorCode.AUTHENTICATION_FAILED,
        `${user}: Authentication failed: password is incorrect, or there is no user with such name`,
      )
    }
    return user
  }

  private async execute(
    http: ReturnType<typeof splitHttpParams>,
    body: Buffer,
    request: { isPost: boolean; user: string; headers: IncomingHttpHeaders; signal: AbortSignal },
  ): Promise<{ bytes: Buffer; format: string }> {
    const { readOnly } = this.options

    // ClickHouse reads the URL query followed by the body; the body of an `INSERT … FORMAT x` in the
    // URL is data, which is passed through without being decoded as SQL.
    let sql: string
    let data: Buffer | undefined
    let analysis: StatementAnalysis
    if (http.query !== undefined && body.length > 0) {
      const head = analyzeStatement(http.query)
      if (
        head.kind === 'INSERT' &&
        head.dataStart !== undefined &&
        http.query.slice(head.dataStart).trim() === ''
      ) {
        sql = http.query
        data = body
        analysis = head
      } else {
        sql = `${http.query}\n${body.toString('utf8')}`
        analysis = analyzeStatement(sql)
      }
    } else {
      sql = http.query ?? body.toString('utf8')
      analysis = analyzeStatement(sql)
    }

    const kind = analysis.kind
    if (kind === '') throw new SqlPortError(ErrorCode.SYNTAX_ERROR, 'Empty query')
    const refuse = (why: string) =>
      new SqlPortError(ErrorCode.READONLY, `${request.user}: Cannot execute query in readonly mode: ${why}`)
    if (analysis.multiStatement) {
      // chdb would run every statement of the text; a ClickHouse server refuses them over HTTP.
      if (readOnly) throw refuse('multi-statements are not allowed')
      throw new SqlPortError(ErrorCode.SYNTAX_ERROR, 'Syntax error: Multi-statements are not allowed')
    }
    if (readOnly) {
      const why = readOnlyRefusal(analysis)
      if (why) throw refuse(why)
    } else if (kind === 'SET' || kind === 'USE') {
      // Without a session, SET and USE over HTTP change nothing that outlives the request; run on the
      // shared chdb session they would change every later query, so they are answered without running.
      return { bytes: Buffer.alloc(0), format: http.defaultFormat ?? 'TabSeparated' }
    } else {
      if (analysis.intoOutfile)
        throw new SqlPortError(ErrorCode.INTO_OUTFILE_NOT_ALLOWED, 'INTO OUTFILE is not allowed')
      if (
        analysis.tokens.some(
          (t, i) => /^FROM$/i.test(t.text) && /^INFILE$/i.test(analysis.tokens[i + 1]?.text ?? ''),
        )
      ) {
        throw new SqlPortError(ErrorCode.NOT_IMPLEMENTED, 'FROM INFILE is not supported over HTTP')
      }
      if (!request.isPost && !READ_ONLY_KINDS.has(kind)) {
        throw new SqlPortError(
          ErrorCode.READONLY,
          `${request.user}: Cannot execute query in readonly mode. For queries over HTTP, method GET implies readonly. You should use method POST for modifying queries`,
        )
      }
    }

    const defaultFormat =
      http.defaultFormat ?? header(request.headers, 'x-clickhouse-format') ?? 'TabSeparated'
    if (!isFormatName(defaultFormat))
      throw new SqlPortError(ErrorCode.UNKNOWN_FORMAT, `Unknown format ${defaultFormat}`)
    const format = kind !== 'INSERT' && analysis.format ? analysis.format.name : defaultFormat

    if (kind === 'INSERT' && analysis.format && isBinaryFormat(analysis.format.name)) {
      // The engine gets its input as SQL text, which a binary payload would not survive.
      throw new SqlPortError(
        ErrorCode.NOT_IMPLEMENTED,
        `Input format ${analysis.format.name} is not supported by this port; use a text format such as JSONEachRow`,
      )
    }

    const database = http.database ?? header(request.headers, 'x-clickhouse-database')
    if (database !== undefined && database !== '' && !isIdentifier(database)) {
      throw new SqlPortError(ErrorCode.BAD_ARGUMENTS, `Invalid database name ${JSON.stringify(database)}`)
    }
    for (const name of http.params.keys()) {
      if (!isIdentifier(name))
        throw new SqlPortError(
          ErrorCode.BAD_QUERY_PARAMETER,
          `Invalid query parameter name ${JSON.stringify(name)}`,
        )
    }

    if (this.options.readOnly) {
      const bytes = await this.runAnalyst(this.options.analysts, sql, analysis, http, {
        database: database || this.options.defaultDatabase,
        format: chdbFormat(defaultFormat),
        user: request.user,
        signal: request.signal,
      })
      return { bytes, format }
    }

    const types = queryParameterTypes(sql, analysis)
    const params: QueryParams = {}
    for (const [name, raw] of http.params) params[name] = decodeQueryParameter(raw, types.get(name))

    const statement = SETTINGS_KINDS.has(kind) ? this.withSettings(sql, analysis, http.settings) : sql
    const bytes = await this.run(
      statement,
      { params, format: chdbFormat(defaultFormat), body: data },
      database || undefined,
      analysis.dataStart !== undefined,
    )
    return { bytes, format }
  }

  /**
   * Read-only mode: the statement, the URL's settings and query parameters go to the analysts' engine,
   * which runs them on a connection of their own where the engine's readonly=1 judges every setting.
   * Settings that name server files are refused here first (the engine refuses them too).
   */
  private async runAnalyst(
    analysts: AnalystEngine,
    sql: string,
    analysis: StatementAnalysis,
    http: ReturnType<typeof splitHttpParams>,
    request: { database: string; format: string; user: string; signal: AbortSignal },
  ): Promise<Buffer> {
    const settings = new Map<string, string>()
    for (const [name, value] of http.settings) {
      if (!isValidSettingName(name))
        throw new SqlPortError(ErrorCode.UNKNOWN_SETTING, `Unknown setting '${name}'`)
      // The connection is readonly=1 whatever a client asks: asking for it is not an error.
      if (name !== 'readonly') settings.set(name, value)
    }
    const own = analysis.settings.flatMap((c) => c.entries.map((e) => e.name))
    for (const name of [...settings.keys(), ...own]) {
      if (isDeniedReadOnlySetting(name)) {
        throw new SqlPortError(
          ErrorCode.READONLY,
          `${request.user}: Cannot modify '${name}' setting in readonly mode`,
        )
      }
    }
    this.refuseWhenQueueFull(this.limiter.pending)
    return this.limiter.run(request.signal, () =>
      analysts.run({
        sql,
        params: http.params,
        settings,
        database: request.database,
        format: request.format,
        signal: request.signal,
      }),
    )
  }

  private refuseWhenQueueFull(pending: number): void {
    const maxQueued = this.options.maxQueuedRequests ?? 100
    if (pending >= maxQueued) {
      throw new SqlPortError(
        ErrorCode.TOO_MANY_SIMULTANEOUS_QUERIES,
        `Too many simultaneous queries. Maximum: ${maxQueued}`,
      )
    }
  }

  /** Writable mode: the URL's settings ahead of the statement's own, as ClickHouse applies them. */
  private withSettings(sql: string, analysis: StatementAnalysis, given: Map<string, string>): string {
    const defaults: Record<string, SettingValue> = {}
    for (const [name, value] of given) {
      if (!isValidSettingName(name))
        throw new SqlPortError(ErrorCode.UNKNOWN_SETTING, `Unknown setting '${name}'`)
      defaults[name] = value
    }
    return addSettings(sql, { defaults }, analysis)
  }

  private run(
    sql: string,
    options: { params: QueryParams; format: string; body: Buffer | undefined },
    database: string | undefined,
    inlineData: boolean,
  ): Promise<Buffer> {
    const { executor, defaultDatabase } = this.options
    this.refuseWhenQueueFull(this.queue.pending)
    const exec = (text: string) =>
      executor.exec(text, {
        params: options.params,
        format: options.format,
        ...(options.body ? { body: options.body } : {}),
      })
    return this.queue.run(async () => {
      if (database === undefined || database === defaultDatabase) return exec(sql)
      const restore = () =>
        executor.exec(`USE \`${defaultDatabase}\``, {}).then(
          () => undefined,
          () => undefined,
        )
      // Data runs to the end of the text, so after an INSERT with data the restore is its own call.
      if (options.body || inlineData) {
        try {
          return await exec(`USE \`${database}\`;\n${sql}`)
        } finally {
          await restore()
        }
      }
      try {
        return await exec(`USE \`${database}\`;\n${sql}\n;\nUSE \`${defaultDatabase}\``)
      } catch (err) {
        // chdb stops at the failing statement, leaving the session in `database`.
        await restore()
        throw err
      }
    })
  }

  private async sendResult(
    req: IncomingMessage,
    res: ServerResponse,
    result: { bytes: Buffer; format: string },
    queryId: string,
    elapsedNs: bigint,
    http: ReturnType<typeof splitHttpParams>,
  ): Promise<void> {
    const info = this.info
    const summary = {
      read_rows: '0',
      read_bytes: '0',
      written_rows: '0',
      written_bytes: '0',
      total_rows_to_read: '0',
      result_rows: '0',
      result_bytes: String(result.bytes.length),
      elapsed_ns: String(elapsedNs),
    }
    const headers: Record<string, string> = {
      'Content-Type': contentTypeFor(result.format),
      'X-ClickHouse-Server-Display-Name': this.displayName,
      'X-ClickHouse-Query-Id': queryId,
      'X-ClickHouse-Format': result.format,
      'X-ClickHouse-Timezone': info.timezone,
      'X-ClickHouse-Summary': JSON.stringify(summary),
    }
    let payload = result.bytes
    const encoding = http.enableHttpCompression
      ? responseEncoding(header(req.headers, 'accept-encoding'))
      : undefined
    if (encoding) {
      const level = http.compressionLevel ?? 3
      payload =
        encoding === 'gzip'
          ? await gzip(payload, { level })
          : encoding === 'deflate'
            ? await deflate(payload, { level })
            : await brotli(payload)
      headers['Content-Encoding'] = encoding
      headers['Vary'] = 'Accept-Encoding'
    }
    headers['Content-Length'] = String(payload.length)
    res.writeHead(200, headers)
    res.end(payload)
  }

  private sendError(
    req: IncomingMessage,
    res: ServerResponse,
    err: SqlPortError,
    queryId: string,
    drained: boolean,
  ): void {
    const { version } = this.info
    if (res.headersSent) {
      res.destroy()
      return
    }
    const body = Buffer.from(errorBody(err, version))
    const status = httpStatusForCode(err.code)
    const headers: Record<string, string> = {
      'Content-Type': 'text/plain; charset=UTF-8',
      'Content-Length': String(body.length),
      'X-ClickHouse-Server-Display-Name': this.displayName,
      'X-ClickHouse-Query-Id': queryId,
      'X-ClickHouse-Exception-Code': String(err.code),
    }
    if (status === 401) headers['WWW-Authenticate'] = 'Basic realm="ClickHouse server"'
    if (!drained) {
      // The body was refused unread: discard what still arrives, then drop the connection.
      headers['Connection'] = 'close'
      req.resume()
    }
    res.writeHead(status, headers)
    res.end(body)
  }

  private sendOk(req: IncomingMessage, res: ServerResponse): void {
    req.resume()
    res.writeHead(200, { 'Content-Type': 'text/html; charset=UTF-8', 'Content-Length': '4' })
    res.end('Ok.\n')
  }

  private sendNotFound(req: IncomingMessage, res: ServerResponse, path: string): void {
    req.resume()
    const body = Buffer.from(
      `There is no handle ${path}\n\nUse / or /ping for health checks.\n\nSend queries from your program with POST method or GET /?query=...\n`,
    )
    res.writeHead(404, { 'Content-Type': 'text/plain; charset=UTF-8', 'Content-Length': String(body.length) })
    res.end(body)
  }
}

/** User and password the way ClickHouse's HTTP handler finds them (authenticateUserByHTTP). */
function credentialsOf(
  headers: IncomingHttpHeaders,
  params: URLSearchParams,
): { user: string; password: string } {
  const failed = (message: string) => new SqlPortError(ErrorCode.AUTHENTICATION_FAILED, message)
  const mixed = (a: string, b: string) =>
    failed(`Invalid authentication: it is not allowed to use ${a} and ${b} simultaneously`)
  const headerUser = header(headers, 'x-clickhouse-user') ?? ''
  const headerKey = header(headers, 'x-clickhouse-key') ?? ''
  const authorization = header(headers, 'authorization')
  const inParams = params.has('user') || params.has('password')

  if (headerUser !== '' || headerKey !== '') {
    if (headerUser === '') throw failed('Got an empty user name from X-ClickHouse HTTP headers')
    if (authorization !== undefined) throw mixed('X-ClickHouse HTTP headers', 'Authorization HTTP header')
    if (inParams) throw mixed('X-ClickHouse HTTP headers', 'authentication via parameters')
    return { user: headerUser, password: headerKey }
  }
  if (authorization !== undefined) {
    if (inParams) throw mixed('Authorization HTTP header', 'authentication via parameters')
    const space = authorization.indexOf(' ')
    const scheme = space === -1 ? authorization : authorization.slice(0, space)
    if (scheme.toLowerCase() !== 'basic') {
      throw failed(`Invalid authentication: '${scheme}' HTTP Authorization scheme is not supported`)
    }
    const decoded = Buffer.from(authorization.slice(space + 1).trim(), 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    const user = colon === -1 ? decoded : decoded.slice(0, colon)
    if (user === '') throw failed('Got an empty user name from Authorization HTTP header')
    return { user, password: colon === -1 ? '' : decoded.slice(colon + 1) }
  }
  const user = params.get('user') ?? 'default'
  if (user === '') throw failed('Got an empty user name from authentication via parameters')
  return { user, password: params.get('password') ?? '' }
}

/** A query id that can be echoed in a response header as it is, or undefined. */
function headerSafe(value: string | null | undefined): string | undefined {
  return value && /^[\x20-\x7e]{1,256}$/.test(value) ? value : undefined
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name]
  return Array.isArray(value) ? value[0] : value
}

/** chdb rewrites a format named exactly 'arrow' into a SET that would stick to the session. */
function chdbFormat(format: string): string {
  return format.toLowerCase() === 'arrow' ? 'Arrow' : format
}

function responseEncoding(accept: string | undefined): 'gzip' | 'deflate' | 'br' | undefined {
  if (!accept) return undefined
  const offered = accept
    .toLowerCase()
    .split(',')
    .map((part) => part.trim().split(';')[0])
  if (offered.includes('gzip')) return 'gzip'
  if (offered.includes('br')) return 'br'
  if (offered.includes('deflate')) return 'deflate'
  return undefined
}

/**
 * The request body, decompressed per Content-Encoding, refused past `limit` bytes (raw or decoded) with
 * QUERY_IS_TOO_LARGE, so a large or highly compressed body cannot exhaust memory.
 */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const tooLarge = () =>
    new SqlPortError(
      ErrorCode.QUERY_IS_TOO_LARGE,
      `Request body is too large: the limit of this port is ${limit} bytes`,
    )
  const declared = Number(header(req.headers, 'content-length'))
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(tooLarge())

  const encoding = (header(req.headers, 'content-encoding') ?? '').trim().toLowerCase()
  let decoder: zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress | undefined
  if (encoding === 'gzip' || encoding === 'x-gzip') decoder = zlib.createGunzip()
  else if (encoding === 'deflate') decoder = zlib.createInflate()
  else if (encoding === 'br') decoder = zlib.createBrotliDecompress()
  else if (encoding !== '' && encoding !== 'identity') {
    return Promise.reject(
      new SqlPortError(
        ErrorCode.UNKNOWN_COMPRESSION_METHOD,
        `Unknown HTTP compression method ${JSON.stringify(encoding)}`,
      ),
    )
  }

  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = []
    let raw = 0
    let decoded = 0
    let done = false
    const fail = (err: Error) => {
      if (done) return
      done = true
      decoder?.destroy()
      reject(err)
    }
    const onDecoded = (chunk: Buffer) => {
      if (done) return
      decoded += chunk.length
      if (decoded > limit) return fail(tooLarge())
      chunks.push(chunk)
    }
    const finish = () => {
      if (done) return
      done = true
      resolve(Buffer.concat(chunks, decoded))
    }
    if (decoder) {
      decoder.on('data', onDecoded)
      decoder.on('end', finish)
      decoder.on('error', (err) =>
        fail(
          new SqlPortError(
            ErrorCode.ZLIB_INFLATE_FAILED,
            `Cannot decompress the request body: ${err.message}`,
          ),
        ),
      )
    }
    req.on('data', (chunk: Buffer) => {
      if (done) return
      raw += chunk.length
      if (raw > limit) return fail(tooLarge())
      if (decoder) decoder.write(chunk)
      else onDecoded(chunk)
    })
    req.on('end', () => (decoder ? decoder.end() : finish()))
    req.on('error', fail)
    req.on('close', () => {
      if (!req.complete) fail(new Error('the client closed the connection before the body ended'))
    })
  })
}

/**
 * Fields of a multipart/form-data body (how clickhouse-js sends large query parameters). File parts
 * would be external tables, which this port does not support.
 */
function parseMultipart(body: Buffer, contentType: string): [string, string][] {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType)
  const marker = boundary?.[1] ?? boundary?.[2]
  if (!marker) throw new SqlPortError(ErrorCode.BAD_ARGUMENTS, 'multipart/form-data without a boundary')
  const text = body.toString('utf8')
  const fields: [string, string][] = []
  for (const part of text.split(`--${marker.trim()}`).slice(1)) {
    if (part.startsWith('--')) break
    const split = part.indexOf('\r\n\r\n')
    if (split === -1) continue
    const head = part.slice(0, split)
    let value = part.slice(split + 4)
    if (value.endsWith('\r\n')) value = value.slice(0, -2)
    const disposition = /content-disposition:[^\r\n]*/i.exec(head)?.[0] ?? ''
    if (/filename=/i.test(disposition)) {
      throw new SqlPortError(
        ErrorCode.NOT_IMPLEMENTED,
        'External tables (multipart file parts) are not supported',
      )
    }
    const name = /name="([^"]*)"/i.exec(disposition)?.[1]
    if (name !== undefined) fields.push([name, value])
  }
  return fields
}

/** Runs tasks one after another, in arrival order. */
class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve()
  pending = 0

  run<T>(task: () => Promise<T>): Promise<T> {
    this.pending++
    const result = this.tail.then(task, task).finally(() => {
      this.pending--
    })
    this.tail = result.catch(() => undefined)
    return result
  }
}
