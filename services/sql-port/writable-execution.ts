/**
 * The writable stand-in's execution (the test stand-in for a ClickHouse server,
 * test/fixtures/clickhouse-standin-server.ts): requests run one at a time on the executor's
 * connection, where a `database=` switch is `USE db; …; USE default` as one call; nothing else shares
 * that process's engine.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ClosableExecutor, QueryParams, RawExecutor } from '../../pipelines/connectors/store/store.ts'
import { addSettings, type SettingValue } from './add-settings.ts'
import {
  decodeQueryParameter,
  ErrorCode,
  isBinaryFormat,
  isIdentifier,
  SqlPortError,
  type HttpParams,
} from './clickhouse-protocol.ts'
import { READ_ONLY_KINDS } from './read-only-first-pass.ts'
import { isValidSettingName } from './settings-clause.ts'
import { analyzeStatement, queryParameterTypes, type StatementAnalysis } from './statement-analysis.ts'
import {
  readStatement,
  refuseWhenQueueFull,
  statementTarget,
  type ExecutionRequest,
  type QueryResult,
  type StatementExecution,
} from './statement-execution.ts'

export interface WritableExecutionOptions {
  /** The executor's current database: a request runs there unless it names another. */
  defaultDatabase: string
  /** Requests running or waiting before new ones get TOO_MANY_SIMULTANEOUS_QUERIES. Default 100. */
  maxQueuedRequests?: number
  /**
   * Connections of their own per database (where the executor can open them: connectIn), each
   * running its requests in order, so requests run concurrently, as on a server. Default 4.
   */
  connectionsPerDatabase?: number
}

/** Statement kinds that take a trailing query-level SETTINGS clause (CREATE's would be table settings). */
const SETTINGS_KINDS: ReadonlySet<string> = new Set([
  ...READ_ONLY_KINDS,
  'INSERT',
  'ALTER',
  'DELETE',
  'UPDATE',
  'OPTIMIZE',
])

export class WritableExecution implements StatementExecution {
  /** One request at a time on the executor's shared connection. */
  private readonly queue = new SerialQueue()
  /** Connections of their own per database, where the executor has them. */
  private readonly connections: DatabaseConnections
  /** Requests running or waiting, on any connection. */
  private pending = 0

  constructor(
    private readonly executor: RawExecutor,
    private readonly options: WritableExecutionOptions,
  ) {
    if (!isIdentifier(options.defaultDatabase))
      throw new Error(`invalid defaultDatabase ${options.defaultDatabase}`)
    this.connections = new DatabaseConnections(executor, options.connectionsPerDatabase ?? 4)
  }

  async execute(http: HttpParams, body: Buffer, request: ExecutionRequest): Promise<QueryResult> {
    const { sql, data, analysis } = readStatement(http, body)
    const kind = analysis.kind
    if (analysis.multiStatement) {
      // chdb would run every statement of the text; a ClickHouse server refuses them over HTTP.
      throw new SqlPortError(ErrorCode.SYNTAX_ERROR, 'Syntax error: Multi-statements are not allowed')
    }
    if (kind === 'SET' || kind === 'USE') {
      // Without a session, SET and USE over HTTP change nothing that outlives the request; run on the
      // shared chdb session they would change every later query, so they are answered without running.
      return { bytes: Buffer.alloc(0), format: http.defaultFormat ?? 'TabSeparated' }
    }
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

    const target = statementTarget(analysis, http, request.headers, true)
    const types = queryParameterTypes(sql, analysis)
    const params: QueryParams = {}
    for (const [name, raw] of http.params) params[name] = decodeQueryParameter(raw, types.get(name))

    const statement = SETTINGS_KINDS.has(kind) ? withSettings(sql, analysis, http.settings) : sql
    if (kind === 'INSERT' && data && analysis.format && isBinaryFormat(analysis.format.name)) {
      const bytes = await this.insertBinary(
        statement,
        data,
        target.database ?? this.options.defaultDatabase,
        params,
      )
      return { bytes, format: target.format }
    }
    const bytes = await this.run(
      statement,
      { params, format: target.engineFormat, body: data },
      target.database,
      analysis.dataStart !== undefined,
    )
    return { bytes, format: target.format }
  }

  /**
   * `INSERT INTO t (…) [SETTINGS …] FORMAT RowBinary` (or Native…) with the rows as the body, as a
   * ClickHouse server takes it. chdb reads statements as text, so the rows go through a file:
   * `INSERT INTO t (…) [SETTINGS …] SELECT * FROM file(…, fmt, '<the columns' types>')`. An
   * `INSERT INTO t (…) SELECT … FROM input('<structure>') FORMAT fmt` reads the file in place of
   * `input(…)`, with the request's query parameters.
   */
  private async insertBinary(
    sql: string,
    data: Buffer,
    database: string,
    params: QueryParams,
  ): Promise<Buffer> {
    const analysis = analyzeStatement(sql)
    const { tokens, format } = analysis
    const formatKeyword = tokens.at(-2)
    if (!format || !formatKeyword) throw new SqlPortError(ErrorCode.SYNTAX_ERROR, 'INSERT without a format')
    const head = sql.slice(0, formatKeyword.start)
    const input = inputCall(tokens)
    if (input)
      return this.withFile(data, (file) =>
        this.run(
          `${sql.slice(0, input.start)}file(${literal(file)}, ${literal(format.name)}, ${input.structure})${sql.slice(input.end, formatKeyword.start)}`,
          { params, format: 'TabSeparated', body: undefined },
          database,
          false,
        ),
      )
    const target = insertTarget(tokens)
    const types = await this.columnTypes(target.database ?? database, target.table)
    const columns = target.columns ?? [...types.keys()]
    const structure = columns
      .map((column) => {
        const type = types.get(column)
        if (type === undefined)
          throw new SqlPortError(
            ErrorCode.NO_SUCH_COLUMN_IN_TABLE,
            `No such column ${column} in table ${target.table}`,
          )
        return `${column} ${type}`
      })
      .join(', ')
    return this.withFile(data, (file) =>
      this.run(
        `${head} SELECT * FROM file(${literal(file)}, ${literal(format.name)}, ${literal(structure)})`,
        { params: {}, format: 'TabSeparated', body: undefined },
        database,
        false,
      ),
    )
  }

  /** `data` in a temporary file for the engine to read, removed once `use` is done. */
  private async withFile(data: Buffer, use: (file: string) => Promise<Buffer>): Promise<Buffer> {
    const dir = await mkdtemp(join(tmpdir(), 'standin-insert-'))
    const file = join(dir, 'rows')
    try {
      await writeFile(file, data)
      return await use(file)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  }

  private async columnTypes(database: string, table: string): Promise<Map<string, string>> {
    const text = (
      await this.executor.exec(
        'SELECT name, type FROM system.columns WHERE database = {db:String} AND table = {t:String} ORDER BY position',
        { params: { db: database, t: table }, format: 'JSONEachRow' },
      )
    ).toString('utf8')
    const types = new Map<string, string>()
    for (const line of text.split('\n')) {
      if (!line) continue
      const { name, type } = JSON.parse(line) as { name: string; type: string }
      types.set(name, type)
    }
    if (types.size === 0)
      throw new SqlPortError(ErrorCode.UNKNOWN_TABLE, `Table ${database}.${table} does not exist`)
    return types
  }

  private run(
    sql: string,
    options: { params: QueryParams; format: string; body: Buffer | undefined },
    database: string | undefined,
    inlineData: boolean,
  ): Promise<Buffer> {
    const { executor } = this
    const { defaultDatabase } = this.options
    refuseWhenQueueFull(this.pending, this.options.maxQueuedRequests ?? 100)
    this.pending++
    const exec = (on: Pick<RawExecutor, 'exec'>, text: string) =>
      on.exec(text, {
        params: options.params,
        format: options.format,
        ...(options.body ? { body: options.body } : {}),
      })
    const inDatabase = database ?? defaultDatabase
    return (async () => {
      const connection = await this.connections.pick(inDatabase)
      if (connection) return connection.queue.run(() => exec(connection.executor, sql))
      // No connection of its own (the executor has none, or the database does not exist yet: the
      // statement then fails, or creates it, as on a server): the shared one, switched for the call.
      return this.queue.run(async () => {
        if (inDatabase === defaultDatabase) return exec(executor, sql)
        const restore = () =>
          executor.exec(`USE \`${defaultDatabase}\``, {}).then(
            () => undefined,
            () => undefined,
          )
        // Data runs to the end of the text, so after an INSERT with data the restore is its own call.
        if (options.body || inlineData) {
          try {
            return await exec(executor, `USE \`${inDatabase}\`;\n${sql}`)
          } finally {
            await restore()
          }
        }
        try {
          return await exec(executor, `USE \`${inDatabase}\`;\n${sql}\n;\nUSE \`${defaultDatabase}\``)
        } catch (err) {
          // chdb stops at the failing statement, leaving the session in `database`.
          await restore()
          throw err
        }
      })
    })().finally(() => {
      this.pending--
    })
  }

  /** Closes the connections of their own. */
  close(): void {
    this.connections.close()
  }
}

/** The table (and database) and column list of an `INSERT INTO [db.]t [(a, b)] …`'s tokens. */
function insertTarget(tokens: StatementAnalysis['tokens']): {
  database: string | undefined
  table: string
  columns: string[] | undefined
} {
  let i = 2
  if (/^TABLE$/i.test(tokens[i]?.text ?? '')) i++
  const name = (t: (typeof tokens)[number] | undefined) =>
    t && (t.kind === 'word' || t.kind === 'quoted') ? t.text.replace(/^[`"]|[`"]$/g, '') : undefined
  let database: string | undefined
  let table = name(tokens[i])
  if (tokens[i + 1]?.text === '.') {
    database = table
    table = name(tokens[i + 2])
    i += 2
  }
  if (table === undefined) throw new SqlPortError(ErrorCode.SYNTAX_ERROR, 'INSERT without a table')
  i++
  let columns: string[] | undefined
  if (tokens[i]?.text === '(') {
    columns = []
    for (i++; i < tokens.length && tokens[i]!.text !== ')'; i++) {
      const column = name(tokens[i])
      if (column !== undefined) columns.push(column)
    }
  }
  return { database, table, columns }
}

/** `input('<structure>')` in an INSERT's SELECT: where it is, and its structure literal as written. */
function inputCall(
  tokens: StatementAnalysis['tokens'],
): { start: number; end: number; structure: string } | undefined {
  for (let i = 0; i + 3 < tokens.length; i++) {
    const [name, open, structure, close] = [tokens[i]!, tokens[i + 1]!, tokens[i + 2]!, tokens[i + 3]!]
    if (
      name.kind === 'word' &&
      name.text.toLowerCase() === 'input' &&
      open.text === '(' &&
      structure.kind === 'string' &&
      close.text === ')'
    )
      return { start: name.start, end: close.end, structure: structure.text }
  }
  return undefined
}

const literal = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`

/** The URL's settings ahead of the statement's own, as ClickHouse applies them. */
function withSettings(sql: string, analysis: StatementAnalysis, given: Map<string, string>): string {
  const defaults: Record<string, SettingValue> = {}
  for (const [name, value] of given) {
    if (!isValidSettingName(name))
      throw new SqlPortError(ErrorCode.UNKNOWN_SETTING, `Unknown setting '${name}'`)
    defaults[name] = value
  }
  return addSettings(sql, { defaults }, analysis)
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

interface Connection {
  executor: ClosableExecutor
  queue: SerialQueue
}

/**
 * Up to `perDatabase` connections of their own per database, opened as requests find the open ones
 * busy; a request goes to the one with the fewest requests running or waiting. A database that
 * does not exist gets none (its statements take the shared connection, which reports that).
 */
class DatabaseConnections {
  private readonly open = new Map<string, Connection[]>()
  private readonly opening = new Map<string, Promise<Connection | undefined>>()
  private closed = false

  constructor(
    private readonly executor: RawExecutor,
    private readonly perDatabase: number,
  ) {}

  async pick(database: string): Promise<Connection | undefined> {
    if (!this.executor.connectIn || this.perDatabase <= 0 || this.closed) return undefined
    const list = this.open.get(database) ?? []
    const idlest = list.reduce<Connection | undefined>(
      (best, c) => (best === undefined || c.queue.pending < best.queue.pending ? c : best),
      undefined,
    )
    if (idlest && (idlest.queue.pending === 0 || list.length >= this.perDatabase)) return idlest
    // One opening per database at a time; meanwhile requests share the open ones.
    const pending = this.opening.get(database)
    if (pending) return idlest ?? (await pending)
    const opened = this.connect(database)
    this.opening.set(database, opened)
    try {
      return (await opened) ?? idlest
    } finally {
      this.opening.delete(database)
    }
  }

  close(): void {
    this.closed = true
    for (const list of this.open.values()) for (const c of list) c.executor.close()
    this.open.clear()
  }

  private async connect(database: string): Promise<Connection | undefined> {
    let executor: ClosableExecutor
    try {
      executor = await this.executor.connectIn!(database)
    } catch {
      return undefined
    }
    if (this.closed) {
      executor.close()
      return undefined
    }
    const connection = { executor, queue: new SerialQueue() }
    this.open.set(database, [...(this.open.get(database) ?? []), connection])
    return connection
  }
}
