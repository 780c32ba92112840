/**
 * The writable stand-in's execution (the test stand-in for a ClickHouse server,
 * test/fixtures/clickhouse-standin-server.ts): requests run one at a time on the executor's
 * connection, where a `database=` switch is `USE db; …; USE default` as one call; nothing else shares
 * that process's engine.
 */
import type { QueryParams, RawExecutor } from '../../pipelines/connectors/store/store.ts'
import { addSettings, type SettingValue } from './add-settings.ts'
import {
  decodeQueryParameter,
  ErrorCode,
  isIdentifier,
  SqlPortError,
  type HttpParams,
} from './clickhouse-protocol.ts'
import { READ_ONLY_KINDS } from './read-only-first-pass.ts'
import { isValidSettingName } from './settings-clause.ts'
import { queryParameterTypes, type StatementAnalysis } from './statement-analysis.ts'
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
  /** One request at a time on the executor's connection. */
  private readonly queue = new SerialQueue()

  constructor(
    private readonly executor: RawExecutor,
    private readonly options: WritableExecutionOptions,
  ) {
    if (!isIdentifier(options.defaultDatabase))
      throw new Error(`invalid defaultDatabase ${options.defaultDatabase}`)
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

    const target = statementTarget(analysis, http, request.headers)
    const types = queryParameterTypes(sql, analysis)
    const params: QueryParams = {}
    for (const [name, raw] of http.params) params[name] = decodeQueryParameter(raw, types.get(name))

    const statement = SETTINGS_KINDS.has(kind) ? withSettings(sql, analysis, http.settings) : sql
    const bytes = await this.run(
      statement,
      { params, format: target.engineFormat, body: data },
      target.database,
      analysis.dataStart !== undefined,
    )
    return { bytes, format: target.format }
  }

  private run(
    sql: string,
    options: { params: QueryParams; format: string; body: Buffer | undefined },
    database: string | undefined,
    inlineData: boolean,
  ): Promise<Buffer> {
    const { executor } = this
    const { defaultDatabase } = this.options
    refuseWhenQueueFull(this.queue.pending, this.options.maxQueuedRequests ?? 100)
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
}

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
